"""``memstrata search``: one query, or a file of them."""

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
    NsOpt,
    RecipeOpt,
    app,
    err,
    errors,
    kind_budgets,
    load_config,
    note_missing_indexes,
    open_memory,
    out,
    print_hits,
)
from memstrata.config import Config
from memstrata.errors import InvalidInputError, MemstrataError
from memstrata.importers import jsonl
from memstrata.store.base import check_namespace
from memstrata.wording import plural


@app.command()
def search(
    query: Annotated[str | None, typer.Argument(help="The question or keywords.")] = None,
    db: DbOpt = None,
    namespace: NsOpt = None,
    k: Annotated[
        int,
        typer.Option(
            "--k",
            "-k",
            help="Hits to return, whatever the recipe: a recipe that returns other kinds "
            "too (facts, entities) shares them between its kinds, shown under the table.",
        ),
    ] = 10,
    queries: Annotated[
        Path | None,
        typer.Option(
            "--queries",
            help='JSONL file of {"id", "query", "namespace"?}.',
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help=f"One JSON line per query; {JSON_ERRORS}.")
    ] = False,
    recipe: RecipeOpt = None,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Show why each hit was found: its ranks, the query terms it holds, the "
            "rules that moved it.",
        ),
    ] = False,
    adaptive: Annotated[
        bool,
        typer.Option(
            "--adaptive",
            help="Return as many source turns as the evidence needs (at most k): those "
            "scoring at least budgets.evidence_keep of the best.",
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Search memory and print hits with the episodes they rest on.

    The score is the hit's relevance to the query, 0..1, on one scale for every query;
    the hits come in the recipe's order (fused ranks), each kind its own section of the
    table. With --explain, each hit shows the recipe's routes that found it with its
    rank in each, its rank in its route's own candidate lists, the query terms it holds
    and the ranking rules that moved it. A note says how many episodes the recipe's
    builders have not folded in yet.
    """
    with errors(as_json=as_json):
        if (query is None) == (queries is None):
            raise InvalidInputError("give either a QUERY or --queries FILE")
        cfg = load_config(config)
        jobs = _query_jobs(query, queries, cfg.namespace if namespace is None else namespace)
        asyncio.run(_search(cfg, db, config, jobs, k, recipe, as_json, explain, adaptive))


def _query_jobs(query: str | None, path: Path | None, namespace: str) -> list[dict[str, str]]:
    if query is not None:
        return [{"id": "q", "query": query, "namespace": namespace}]
    assert path is not None
    jobs = []
    for line, raw in enumerate(path.read_bytes().removeprefix(jsonl.BOM).splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
            ns = obj.get("namespace")
            jobs.append(
                {
                    "id": str(obj.get("id", line)),
                    "query": str(obj["query"]),
                    "namespace": check_namespace(namespace if ns is None else ns),
                }
            )
        except InvalidInputError as exc:
            raise InvalidInputError(f"{path} line {line}: {exc}") from exc
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise MemstrataError(f"{path} line {line}: not a query object ({exc})") from exc
    return jobs


async def _search(
    cfg: Config,
    db: str | None,
    config: Path | None,
    jobs: list[dict[str, str]],
    k: int,
    recipe: str | None,
    as_json: bool,
    explain: bool = False,
    adaptive: bool = False,
) -> None:
    memory = await open_memory(cfg, db)
    try:
        fusion = memory.engine.recipe(recipe or cfg.recipe).fusion
        by_ns: dict[str, list[dict[str, str]]] = {}
        for job in jobs:
            by_ns.setdefault(job["namespace"], []).append(job)
        results = {}
        for ns, group in by_ns.items():
            found = await memory.search_many(
                [j["query"] for j in group],
                namespace=ns,
                k=k,
                recipe=recipe,
                max_tokens=None,
                adaptive=adaptive,
            )
            results.update({j["id"]: r for j, r in zip(group, found, strict=True)})
        for job in jobs:
            result = results[job["id"]]
            if as_json:
                hits = []
                for h in result.hits:
                    row: dict[str, Any] = {
                        "kind": h.kind,
                        "text": h.text,
                        "score": h.score,
                        "sources": h.sources,
                    }
                    if explain:
                        why = h.why.model_dump() if h.why is not None else None
                        row.update(ranks=h.ranks, routes=h.routes, why=why)
                    hits.append(row)
                line: dict[str, Any] = {"id": job["id"], "hits": hits}
                if explain:
                    line["pending"] = result.pending
                sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
            else:
                print_hits(job["query"], result.hits, explain=explain)
                budgets = kind_budgets(fusion, k, result.hits)
                if budgets:
                    out.print(Text(budgets, style="dim"))
                if result.pending:
                    err.print(
                        f"note: {plural(result.pending, 'episode')} not yet folded into this "
                        "recipe's structures (memstrata build, or a worker)"
                    )
        await note_missing_indexes(memory, list(by_ns), db, config)
    finally:
        await memory.close()
