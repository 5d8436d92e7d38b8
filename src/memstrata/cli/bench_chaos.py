"""``memstrata bench chaos``: every design's llm tier through damaged replies."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from memstrata.cli.common import ConfigOpt, bench_app, errors, load_config, out
from memstrata.wording import plural

INNERS = ("filler", "gguf", "config")


@bench_app.command("chaos")
def bench_chaos(
    designs: Annotated[
        str, typer.Option(help="Designs, comma-separated (default: all five).")
    ] = "mnemis,personalai,higmem,memtree,mindgraph",
    turns: Annotated[
        int, typer.Option(help="Turns of the bundled sample conversation (1-42).")
    ] = 24,
    seeds: Annotated[str, typer.Option(help="Chaos seeds, comma-separated: one run each.")] = "1",
    rate: Annotated[float, typer.Option(help="Share of replies damaged (0-1).")] = 0.5,
    faults: Annotated[
        str | None,
        typer.Option(help="Faults, comma-separated (default: every kind; see llm.chaos)."),
    ] = None,
    inner: Annotated[
        str,
        typer.Option(
            help="The model whose replies are damaged: 'filler' (valid replies made of the "
            "prompt's words, no model, seconds), 'gguf' (the bundled model, minutes) or "
            "'config' (the backend the configuration names, e.g. an OpenAI-compatible server)."
        ),
    ] = "filler",
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where to write chaos.json and chaos.md.")
    ] = Path("bench-out"),
    config: ConfigOpt = None,
) -> None:
    """Build each design at the llm tier on a short conversation through a backend that
    damages a share of the replies (over-bound lists, prose around the JSON, wrong types,
    unknown enum values, cut-off and empty replies, slow replies, timeouts), ask two
    questions, then `retry` with the damage switched off and build again.

    Prints, per design and seed: replies sent, faults injected, calls kept / repaired /
    failed, items cut to a bound or dropped, episodes built, failed and lost (must be 0),
    and the episodes built after the retry (must be all)."""
    from memstrata.eval import chaos
    from memstrata.factory import shared_default_embedder

    if inner not in INNERS:
        raise typer.BadParameter(f"--inner must be one of {', '.join(INNERS)}")
    chosen = [d.strip() for d in designs.split(",") if d.strip()]
    runs = [int(s) for s in seeds.split(",") if s.strip()]
    fault_list = [f.strip() for f in faults.split(",")] if faults else None
    with tempfile.TemporaryDirectory() as tmp, errors():
        cfg = load_config(config)
        embedder = shared_default_embedder(cfg)
        rows: list[dict[str, Any]] = []
        for seed in runs:
            for design in chosen:
                backend = _inner(inner, cfg)
                row = asyncio.run(
                    chaos.run_design(
                        design,
                        chaos.conversation(turns),
                        chaos.QUESTIONS,
                        backend,
                        path=Path(tmp) / f"{design}-{seed}.db",
                        embedder=embedder,
                        seed=seed,
                        rate=rate,
                        faults=fault_list,
                        max_tokens=cfg.llm.max_tokens,
                        budgets=cfg.llm.budgets() if inner == "config" else None,
                    )
                )
                row["seed"] = seed
                rows.append(row)
                out.print(f"{design} seed {seed}: {plural(row['calls'], 'call')}", markup=False)
        setup: dict[str, Any] = {"inner": inner, "rate": rate, "seed": seeds, "turns": turns}
        totals = chaos.totals(rows)
        report = {"setup": setup, "designs": rows, "totals": totals}
        paths = chaos.write(report, out_dir)
    sys.stdout.write(chaos.markdown(report))
    out.print(f"written {paths[0]} and {paths[1]}", markup=False)
    if totals["lost"]:
        raise typer.Exit(1)


def _inner(kind: str, cfg: Any) -> Any:
    from memstrata.llm import make_backend
    from memstrata.llm.filler import SchemaFiller

    if kind == "filler":
        return SchemaFiller(seed=0)
    if kind == "gguf":
        return make_backend("gguf", model_path=cfg.llm.model_path, n_threads=cfg.llm.threads)
    from memstrata.factory import make_llm
    from memstrata.store import open_store

    client = make_llm(cfg, open_store(":memory:"))
    if client is None:
        raise typer.BadParameter("--inner config needs llm.kind in the configuration")
    return client.backend
