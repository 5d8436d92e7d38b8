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
    load_config,
    open_memory,
    out,
    progress_bar,
)
from memstrata.config import Config
from memstrata.errors import InvalidInputError, MemstrataError
from memstrata.importers import jsonl
from memstrata.memory import prepare_episode
from memstrata.store import PreparedEpisode
from memstrata.store.base import DeleteReport, check_namespace
from memstrata.wording import plural


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
        _print_bad(bad)
        err.print(Text(f"{plural(len(bad), 'line')} not imported", style="red"))
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
                (plural(len(conflicts), "conflict"), "red"),
                ": re-run with --replace to replace them (the stored versions are kept, see "
                "`memstrata history`)",
            )
        )
    if bad or conflicts:
        raise typer.Exit(1)


def _print_bad(bad: list[tuple[int, str]]) -> None:
    for line, reason in bad[:50]:
        err.print(Text.assemble((f"line {line}: ", "yellow"), reason))
    if len(bad) > 50:
        err.print(f"... and {len(bad) - 50} more")


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
        from memstrata.importers import locomo

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
    if not total and bad:  # nothing is written, not even a new store: the lines, then why
        _print_bad(bad)
        raise InvalidInputError(
            f"no line of {file} holds a valid episode ({plural(len(bad), 'line')} refused, "
            "listed above); nothing was imported and nothing was written"
        )
    if not total:
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
            f"imported {plural(added, 'new episode')}, {existing} already present, {changed}"
            f"into {plural(len(batches), 'namespace')}: {', '.join(batches)}"
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
                    f"{plural(f['attempts'], 'attempt')}: {f['error']}"
                )
            )
    waiting = [
        ns["namespace"]
        for ns in data["namespaces"]
        if ns["failures"] or any(c.get("queued") for c in ns["builds"].values())
    ]
    if waiting:
        err.print(
            Text(
                "to go on: `memstrata build` (or `memstrata worker`) folds in what is queued; "
                "`memstrata retry -n NAMESPACE` queues the failed episodes again at once",
                style="dim",
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
            "cut_off": "cut off",
            "prompt_tokens": "in",
            "completion_tokens": "out",
            "reasoning_tokens": "reasoning",
        }
        llm = Table(
            caption="cut: items cut to a bound; dropped: items that broke the schema; "
            "cut off: replies kept although the token limit stopped them (after asking "
            "with more room); in / out: prompt / completion tokens, of which reasoning "
            "(cached calls: --json)"
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
    what = f"{plural(len(ids), 'episode')} from" if ids else "the whole namespace"
    if not yes and not typer.confirm(f"Delete {what} {namespace!r}?"):
        raise typer.Exit(1)
    with errors():
        cfg = load_config(config)

        async def run() -> DeleteReport:
            memory = await open_memory(cfg, db)
            try:
                if ids:
                    return await memory.delete(ids, namespace=namespace)
                return DeleteReport(await memory.delete_namespace(namespace))
            finally:
                await memory.close()

        removed = asyncio.run(run())
    out.print(f"deleted {plural(int(removed), 'episode')} from {namespace!r}")
    if removed.missing:
        err.print(
            Text.assemble(
                (f"{plural(len(removed.missing), 'id')} not found in {namespace!r}: ", "red"),
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
    from memstrata.factory import make_registry

    with errors(as_json=as_json):
        reg = make_registry(load_config(config))
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
    profiles: Annotated[
        bool,
        typer.Option(
            "--profiles",
            help="Print the budgets of every profile per stage (a markdown table) instead.",
        ),
    ] = False,
) -> None:
    """Print the effective configuration (defaults < file < MEMSTRATA_* < flags), secrets
    masked; with an LLM, also the budgets in effect for it (``llm_budgets``: the profile,
    the model's limits, each stage's completion budget under the ``llm.max_tokens``
    ceiling, and the reply bounds; derived from ``[llm]``, not a key to set)."""
    if profiles:
        from memstrata.llm.budgets import markdown_table

        sys.stdout.write(markdown_table())
        return
    from memstrata.factory import make_registry

    with errors():
        cfg = load_config(config)
        make_registry(cfg)  # an unknown recipe is an error here too
    shown = cfg.masked()
    if cfg.llm.kind != "none":
        shown["llm_budgets"] = cfg.llm.budgets().table(cfg.llm.max_tokens)
    sys.stdout.write(json.dumps(shown, indent=2) + "\n")


# The other commands register themselves on ``app`` when imported; the benchmarks' on
# first use (``BENCH_MODULES``).
from memstrata.cli import (  # noqa: E402, F401
    build,
    copy,
    demo,
    edit,
    pg,
    read,
    search,
    serve,
)


def main() -> None:  # pragma: no cover
    app()
