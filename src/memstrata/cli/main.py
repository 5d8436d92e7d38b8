"""The ``memstrata`` command line: the everyday verbs. Building and the queue worker are
in :mod:`.build`, benchmarks in :mod:`.bench`, the demo in :mod:`.demo`."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
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
    open_memory,
    out,
    print_hits,
    progress_bar,
)
from memstrata.config import Config
from memstrata.errors import InvalidInputError, MemstrataError
from memstrata.importers import jsonl
from memstrata.memory import prepare_episode
from memstrata.store import PreparedEpisode
from memstrata.store.base import DeleteReport, check_namespace


@app.command("import")
def import_(
    file: Annotated[
        Path, typer.Argument(help="JSONL or LoCoMo JSON file.", exists=True, dir_okay=False)
    ],
    db: DbOpt = None,
    namespace: NsOpt = None,
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="jsonl or locomo (default: from the file extension)."),
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Episodes per transaction.")] = 256,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Replace episodes whose id is stored with other content (old version kept).",
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Import episodes. Re-importing the same ids with the same content changes nothing
    (safe to re-run).

    A LoCoMo file goes one namespace per conversation, named by its sample_id (prefixed
    with "NS/" when --namespace is given); turn ids are the dia_ids.

    Bad lines (invalid UTF-8, broken JSON, empty text) are listed with their line number;
    the good lines are imported and the exit status is 1. So are conflicts: an id already
    stored with different content is left unchanged, unless --replace (the replaced
    version is kept: `memstrata history`).
    """
    kind = fmt or ("locomo" if file.suffix.lower() == ".json" else "jsonl")
    with errors():
        if kind not in {"jsonl", "locomo"}:
            raise InvalidInputError(f"unknown format {kind!r}; use jsonl or locomo")
        cfg = load_config(config)
        bad, conflicts = asyncio.run(_import(cfg, db, namespace, file, kind, batch_size, replace))
    if bad:
        for line, reason in bad[:50]:
            err.print(Text.assemble((f"line {line}: ", "yellow"), reason))
        if len(bad) > 50:
            err.print(f"... and {len(bad) - 50} more")
        err.print(Text(f"{len(bad)} line(s) not imported", style="red"))
    if conflicts:
        for where, eid in conflicts[:50]:
            err.print(
                Text.assemble(
                    (f"{where}: ", "yellow"),
                    f"id {eid!r} is already stored with different content; left unchanged",
                )
            )
        if len(conflicts) > 50:
            err.print(f"... and {len(conflicts) - 50} more")
        err.print(
            Text.assemble(
                (f"{len(conflicts)} conflict(s)", "red"),
                ": re-run with --replace to replace them (the stored versions are kept, see "
                "`memstrata history`)",
            )
        )
    if bad or conflicts:
        raise typer.Exit(1)


async def _import(
    cfg: Config,
    db: str | None,
    namespace: str | None,
    file: Path,
    kind: str,
    batch_size: int,
    replace: bool = False,
) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
    """Import; returns the bad lines (line, reason) and the conflicts (where, id).

    The file is read and checked before the store is opened, so a file that holds no
    episodes at all is an error that leaves no store behind."""
    if namespace is not None:
        check_namespace(namespace)  # before anything is read or created
    bad: list[tuple[int, str]] = []
    conflicts: list[tuple[str, str]] = []
    lines_of: dict[str, list[int]] = {}  # JSONL: the lines each id is on
    batches: dict[str, list[PreparedEpisode]] = {}
    if kind == "locomo":
        from memstrata.eval import locomo

        for conv in locomo.load(file):
            ns = conv.namespace if namespace is None else f"{namespace}/{conv.namespace}"
            batches[ns] = [prepare_episode(t, cfg) for t in conv.turns]
    else:
        ns = cfg.namespace if namespace is None else namespace
        items: list[PreparedEpisode] = []
        for line, parsed in jsonl.read(file):
            if isinstance(parsed, jsonl.BadLine):
                bad.append((parsed.line, parsed.reason))
                continue
            try:
                items.append(prepare_episode(parsed, cfg))
            except MemstrataError as exc:
                bad.append((line, str(exc)))
            else:
                lines_of.setdefault(items[-1].external_id, []).append(line)
        batches[ns] = items
    total = sum(len(v) for v in batches.values())
    if not total and not bad:
        raise InvalidInputError(f"{file} holds no episodes; nothing was imported")
    memory = await open_memory(cfg, db, create=True)
    try:
        added = existing = updated = 0
        with progress_bar() as progress:
            task = progress.add_task("importing", total=total)
            for ns, items in batches.items():
                report = await memory.add_many(
                    items,
                    namespace=ns,
                    batch_size=batch_size,
                    progress=lambda n: progress.advance(task, n),
                    replace=replace,
                )
                added += len(report.added)
                existing += len(report.existing)
                updated += len(report.updated)
                conflicts += _conflict_places(report.conflicts, lines_of, ns, kind)
        changed = f"{updated} replaced, " if updated else ""
        changed += f"{len(conflicts)} conflicting (left unchanged), " if conflicts else ""
        out.print(
            f"imported {added} new episode(s), {existing} already present, {changed}into "
            f"{len(batches)} namespace(s): {', '.join(batches)}"
        )
    finally:
        await memory.close()
    return bad, conflicts


def _conflict_places(
    ids: list[str], lines_of: dict[str, list[int]], namespace: str, kind: str
) -> list[tuple[str, str]]:
    """Where each conflicting id is in the file: JSONL line numbers (an id on several lines
    conflicts on its last ones: the first was stored or matched), else the namespace."""
    if kind != "jsonl":
        return [(f"namespace {namespace}", i) for i in ids]
    counts: dict[str, int] = {}
    for i in ids:
        counts[i] = counts.get(i, 0) + 1
    places = [(line, i) for i, n in counts.items() for line in lines_of.get(i, [0])[-n:]]
    return [(f"line {line}", i) for line, i in sorted(places)]


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
            help="Episodes to return. A recipe that returns other kinds too (facts, "
            "entities) gives each its own budget, a multiple of k shown under the table.",
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
        asyncio.run(_search(cfg, db, jobs, k, recipe, as_json, explain, adaptive))


def _query_jobs(query: str | None, path: Path | None, namespace: str) -> list[dict[str, str]]:
    if query is not None:
        return [{"id": "q", "query": query, "namespace": namespace}]
    assert path is not None
    jobs = []
    for line, raw in enumerate(path.read_bytes().splitlines(), start=1):
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
                        f"note: {result.pending} episode(s) not yet folded into this "
                        "recipe's structures (memstrata build, or a worker)"
                    )
    finally:
        await memory.close()


@app.command()
def stats(
    db: DbOpt = None,
    namespace: NsOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help=f"As JSON; {JSON_ERRORS}.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Counts per namespace, LLM calls and failures per stage, file size."""
    with errors(as_json=as_json):
        cfg = load_config(config)

        async def run() -> dict[str, Any]:
            memory = await open_memory(cfg, db)
            try:
                return await memory.stats(namespace)
            finally:
                await memory.close()

        data = asyncio.run(run())
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    out.print(
        f"store {data['store']} ({data['bytes'] / 1e6:.2f} MB), embedder {data['embedder']}, "
        f"recipe {data['recipe']} (builds {data['build_mode']})"
    )
    table = Table("namespace", "episodes", "embedded", "derived records by builder", "builds")
    for ns in data["namespaces"]:
        recs = (
            "; ".join(
                f"{b or '(unowned)'}: " + ", ".join(f"{k} {v}" for k, v in kinds.items())
                for b, kinds in ns["records_by_builder"].items()
            )
            or "-"
        )
        builds = "; ".join(
            f"{b}: {c['done']} done, {c['queued']} queued, {c['failed']} failed, {c['dead']} dead"
            for b, c in ns["builds"].items()
        )
        table.add_row(
            Text(ns["namespace"]), str(ns["episodes"]), str(ns["embedded"]), recs, builds or "-"
        )
    out.print(table)
    for ns in data["namespaces"]:
        for f in ns["failures"][:10]:
            err.print(
                Text(
                    f"{ns['namespace']}: {f['builder']} {f['status']} on {f['episode']} after "
                    f"{f['attempts']} attempt(s): {f['error']}"
                )
            )
    if data["llm"]:
        # kept / repaired / failed calls; items cut to a bound and dropped from replies
        columns = {
            "calls": "calls",
            "kept": "kept",
            "repaired": "repaired",
            "failures": "failed",
            "truncated": "cut",
            "rejected": "dropped",
            "prompt_tokens": "in",
            "completion_tokens": "out",
        }
        llm = Table(
            caption="cut: items cut to a bound; dropped: items that broke the schema; "
            "in / out: prompt / completion tokens (cached calls: --json)"
        )
        llm.add_column("stage", no_wrap=True)
        for title in columns.values():
            llm.add_column(title, justify="right")
        for stage, row in data["llm"].items():
            llm.add_row(stage, *(str(row.get(c, 0)) for c in columns))
        out.print(llm)
    else:
        out.print("no LLM calls recorded")


@app.command()
def delete(
    db: DbOpt = None,
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", help="Namespace to delete from.")
    ] = ...,  # type: ignore[assignment]
    ids: Annotated[
        list[str] | None,
        typer.Option("--id", help="Episode id (repeat). Without it: the whole namespace."),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Delete episodes (or a whole namespace) and everything derived from them.

    Ids that are not stored are listed and the exit status is 1 (the others are deleted).
    """
    what = f"{len(ids)} episode(s) from" if ids else "the whole namespace"
    if not yes and not typer.confirm(f"Delete {what} {namespace!r}?"):
        raise typer.Exit(1)
    with errors():
        cfg = load_config(config)

        async def run() -> DeleteReport:
            memory = await open_memory(cfg, db)
            try:
                return await memory.delete(ids or None, namespace=namespace)
            finally:
                await memory.close()

        removed = asyncio.run(run())
    out.print(f"deleted {int(removed)} episode(s) from {namespace!r}")
    if removed.missing:
        err.print(
            Text.assemble(
                (f"{len(removed.missing)} id(s) not found in {namespace!r}: ", "red"),
                ", ".join(removed.missing),
            )
        )
        raise typer.Exit(1)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    db: DbOpt = None,
    namespace: NsOpt = None,
    k: Annotated[int, typer.Option("--k", "-k", help="Episodes handed to the answerer.")] = 10,
    recipe: RecipeOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help=f"The answer as one JSON object; {JSON_ERRORS}.")
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Answer a question from memory, citing the episodes it rests on.

    With an LLM configured, the recipe's answerer writes the answer from the retrieved
    context; without one, it quotes the best supporting sentences (marked extractive).
    When memory does not hold the answer, it says "Not in memory." (abstained).
    """
    with errors(as_json=as_json):
        cfg = load_config(config)

        async def run() -> Any:
            memory = await open_memory(cfg, db)
            try:
                return await memory.ask(question, namespace=namespace, k=k, recipe=recipe)
            finally:
                await memory.close()

        answer = asyncio.run(run())
    if as_json:
        sys.stdout.write(answer.model_dump_json(exclude={"hits"}) + "\n")
        return
    how = "extractive" if answer.extractive else "generated"
    out.print(Text(answer.text))
    out.print(
        Text(
            f"sources: {', '.join(answer.sources) or '-'} ({how}"
            + (", abstained" if answer.abstained else "")
            + ")",
            style="dim",
        )
    )


@app.command()
def recipes(
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help=f"One object per recipe: name, description, ...; {JSON_ERRORS}."
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """List every recipe: built-in, from installed designs, and from the configuration.

    On a terminal, a table; otherwise (a pipe, a file) one tab-separated line per recipe
    under a header line, every field whole."""
    from memstrata.engine import Registry

    with errors(as_json=as_json):
        cfg = load_config(config)
        reg = Registry.load(cfg.recipes)
    rows = [{**r.summary(), "origin": reg.origin.get(n, "")} for n, r in reg.recipes.items()]
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    header = ("recipe", "builds", "routes", "from", "description")
    cells = [
        (
            r["name"],
            ", ".join(r["builders"]) or "-",
            ", ".join(r["routes"]),
            r["origin"],
            r["description"],
        )
        for r in rows
    ]
    if out.is_terminal:
        table = Table(*header)
        for row in cells:
            table.add_row(*(Text(cell) for cell in row))
        out.print(table)
    else:
        # rich would squeeze a table into 80 columns and cut names; lines are never cut.
        for row in [header, *cells]:
            sys.stdout.write("\t".join(" ".join(cell.split()) for cell in row) + "\n")
    for problem in reg.errors:
        err.print(Text(f"a design plug-in did not load: {problem}", style="yellow"))


@app.command("config")
def showload_config(
    config: ConfigOpt = None,
) -> None:
    """Print the effective configuration (defaults < file < MEMSTRATA_* < flags), secrets
    masked."""
    with errors():
        cfg = load_config(config)
    sys.stdout.write(json.dumps(cfg.masked(), indent=2) + "\n")


# The other commands register themselves on ``app`` when imported.
from memstrata.cli import (  # noqa: E402, F401
    bench,
    bench_chaos,
    bench_explorer,
    bench_faults,
    bench_qa,
    bench_serve,
    bench_store,
    build,
    copy,
    demo,
    edit,
    pg,
    read,
    serve,
)


def main() -> None:  # pragma: no cover
    app()
