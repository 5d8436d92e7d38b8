"""``memstrata read FILE --question ...``: one long document, one question, a design's
reader (``--design``, else the configuration's ``reader``, else the only design with one).
The document is kept in the store, so a later question on it reuses what was built."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from memstrata.cli.common import (
    JSON_ERRORS,
    ConfigOpt,
    DbOpt,
    TierOpt,
    app,
    errors,
    load_config,
    open_memory,
    out,
)
from memstrata.engine import Reading
from memstrata.errors import InvalidInputError
from memstrata.wording import plural


@app.command()
def read(
    file: Annotated[Path, typer.Argument(help="UTF-8 text file.", exists=True, dir_okay=False)],
    question: Annotated[
        str, typer.Option("--question", "-q", help="The question to read the document for.")
    ] = "",
    db: DbOpt = None,
    design: Annotated[
        str | None,
        typer.Option(help="Design whose reader to use (default: configured, or the only one)."),
    ] = None,
    tier: TierOpt = None,
    graph_only: Annotated[
        bool, typer.Option("--graph-only", help="Build (or load) the graph and print it.")
    ] = False,
    chunk_tokens: Annotated[
        int | None,
        typer.Option(
            min=16,
            help="Build chunk size in tokens (default: the reader's, cut to the model's "
            "context window when the model states one).",
        ),
    ] = None,
    max_compaction: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            help="Heuristic tier: fewer claims until the first answer call is at most this "
            "share of the document (default: the reader's, 0.15); a large value, such as "
            "100, keeps them all.",
        ),
    ] = None,
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            help="The LLM for this read: none, gguf (the bundled local model, or "
            "--llm-model-path) or openai (--llm-base-url, --llm-model). Default: configured.",
        ),
    ] = None,
    llm_model: Annotated[
        str | None, typer.Option(help="The model name an OpenAI-compatible server serves.")
    ] = None,
    llm_base_url: Annotated[
        str | None, typer.Option(help="An OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1.")
    ] = None,
    llm_model_path: Annotated[
        Path | None, typer.Option(help="A GGUF model file (for --llm gguf).", dir_okay=False)
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help='One object: {"answer", "abstained", "windows": [{"start", "end", "text", '
            '"node_ids"}], "compaction_ratio", "graph", "usage"}; offsets are characters of '
            f"the file's text; {JSON_ERRORS}.",
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Read one long document for one question and answer, with the passages read.

    The design's reader builds its structure over the document (cached per document,
    question, tier and model in the store), then answers: with an LLM, its answer stage;
    without one, the evidence windows that best match the question.
    """
    with errors(as_json=as_json):
        if not question.strip() and not graph_only:
            raise InvalidInputError("give --question (or --graph-only)")
        llm_options = {
            "llm.kind": llm,
            "llm.model": llm_model,
            "llm.base_url": llm_base_url,
            "llm.model_path": None if llm_model_path is None else str(llm_model_path),
        }
        cfg = load_config(config, **{k: v for k, v in llm_options.items() if v is not None})
        chosen = {"chunk_tokens": chunk_tokens, "max_compaction": max_compaction}
        params = {k: v for k, v in chosen.items() if v is not None} or None
        raw = file.read_bytes()

        async def run() -> Reading:
            memory = await open_memory(cfg, db, create=True)
            try:
                return await memory.read(
                    raw, question, design=design, tier=tier, graph_only=graph_only, params=params
                )
            finally:
                await memory.close()

        reading = asyncio.run(run())
    if as_json or graph_only:
        data: dict[str, Any] = reading.model_dump(exclude={"question", "details"})
        data["details"] = reading.details
        if graph_only:
            data = {"question": question, "graph": reading.graph}
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=None if as_json else 2))
        sys.stdout.write("\n")
        return
    if reading.answer:  # an abstention reads "Not in memory." like every answer's
        out.print(Text(reading.answer, style="yellow" if reading.abstained else ""))
    for w in reading.windows:
        body = " ".join(w.text.split())
        out.print(Text(f"[{w.start}:{w.end}] ({', '.join(w.node_ids)}) ", style="dim"), Text(body))
    g = reading.graph
    ratio = f"{reading.compaction_ratio:.1%}" if reading.compaction_ratio is not None else "-"
    out.print(
        Text(
            f"graph: {plural(g.get('nodes', 0), 'node')}, {plural(g.get('edges', 0), 'edge')}, "
            f"{plural(g.get('chunks', 0), 'chunk')}{' (cached)' if g.get('cached') else ''}; "
            f"compaction {ratio}",
            style="dim",
        )
    )
