"""``memstrata build``, ``worker``, ``retry`` and ``show``: the structures of a recipe."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import time
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
    StopRequest,
    TierOpt,
    app,
    err,
    errors,
    fail,
    interrupted_summary,
    load_config,
    open_memory,
    out,
    print_tree,
    progress_bar,
    stop_on_signals,
)
from memstrata.engine import WorkerReport
from memstrata.errors import MemstrataError
from memstrata.memory import AsyncMemory
from memstrata.wording import plural


@app.command()
def build(
    db: DbOpt = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Namespace (default: every one).")
    ] = None,
    recipe: RecipeOpt = None,
    tier: TierOpt = None,
    rebuild: Annotated[bool, typer.Option(help="Drop the structures and build anew.")] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="The reports as JSON: one object per namespace and builder, and one with "
            '"indexes" (vectors, documents, built, failed, abandoned) per namespace that '
            f"has search indexes; {JSON_ERRORS}.",
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Fold every pending episode into a recipe's structures, and write the search
    indexes of large namespaces.

    A SQLite namespace past indexes.ann_threshold vectors (20,000) gets a vector graph,
    past indexes.text_threshold (20,000) a full-text index, in folders beside the store;
    this writes those missing or behind, with progress, and later searches read them.
    Searches from the command line never write them (a command would end before they
    are done): without them, a search of a large namespace reads all of it.

    Resumable: only episodes not yet built are processed, so re-running after an
    interruption, or after importing more, continues where it stopped. Ctrl-C or SIGTERM
    stop it after the current batch (each batch is one transaction): it prints what was
    built and what is still queued, and exits 130; a second Ctrl-C stops at once. If
    another process is building the same namespace, this waits for it (build.wait_s).
    Prints counts and LLM cost per stage. Exits 1 if an episode failed, and says how to
    try it again (`memstrata retry`, then build or a worker).
    """
    with errors(as_json=as_json):
        cfg = load_config(config)
        chosen = recipe or cfg.recipe

        async def run() -> tuple[list[str], list[dict[str, Any]], StopRequest, dict[str, Any]]:
            with stop_on_signals() as request:
                # A path without a store has nothing to build: say so, create nothing.
                memory = await open_memory(cfg, db)
                try:
                    names = [namespace] if namespace else await memory.namespaces()
                    reports: list[dict[str, Any]] = []
                    with progress_bar() as progress:
                        for ns in names:
                            if request.event.is_set():
                                break
                            total = await _to_build(memory, ns, recipe, rebuild)
                            task = progress.add_task(f"building {ns}", total=total)

                            def advance(n: int, task: Any = task) -> None:
                                progress.advance(task, n)

                            got = await memory.build(
                                ns,
                                recipe=recipe,
                                tier=tier,
                                rebuild=rebuild,
                                progress=advance,
                                stop=request.event,
                            )
                            reports.extend(r.model_dump() for r in got)
                            if _unreachable(reports):
                                break  # the next namespaces would not reach it either
                            if not request.event.is_set():
                                indexed = await _build_indexes(memory, ns, progress, request)
                                if indexed is not None:
                                    reports.append(indexed)
                    left: dict[str, Any] = {}
                    if request.event.is_set() or _unreachable(reports):
                        left = await asyncio.to_thread(memory.engine.queued, names, chosen)
                    return names, reports, request, left
                finally:
                    await memory.close()

        names, reports, request, left = asyncio.run(run())
    if request.event.is_set():
        if not as_json:
            _print_reports(names, reports)
        lines = [interrupted_summary()]
        lines += [f"  still queued in {ns}: {_counts(per)}" for ns, per in left.items()]
        if not left:
            lines.append("  nothing is queued")
        if rebuild:
            lines.append("  (run it without --rebuild to continue, or it starts over)")
        fail("\n".join(lines), "Interrupted", as_json=as_json, label="interrupted")
        raise typer.Exit(130)
    if as_json:
        sys.stdout.write(json.dumps(reports, indent=2, default=str) + "\n")
    else:
        _print_reports(names, reports)
    failed = [r for r in reports if r.get("failed")]
    if failed:
        err.print(Text(_retry_hint(failed, db, config, recipe, tier), style="red"))
    why = _unreachable(reports)
    if why:
        again = "memstrata build" + _options(db, config, recipe)
        again += f" --tier {shlex.quote(tier)}" if tier else ""
        err.print(Text(_unreachable_hint(why, left, again), style="red"))
    if failed or why or any(r["indexes"]["failed"] for r in reports if "indexes" in r):
        raise typer.Exit(1)


def _unreachable(reports: list[dict[str, Any]]) -> str | None:
    return next((r["unreachable"] for r in reports if r.get("unreachable")), None)


def _unreachable_hint(why: str, left: dict[str, Any], again: str) -> str:
    """Why a build stopped before the end, what it left queued and how to go on."""
    lines = [f"stopped: the LLM server could not be reached ({why})"]
    for ns, per in left.items():
        lines.append(f"  still queued in {ns}: {_counts(per)} (not counted as failed)")
    lines.append(
        "  when the server answers (or llm.base_url is corrected), go on with: "
        f"{again} (or a worker)"
    )
    return "\n".join(lines)


async def _build_indexes(
    memory: AsyncMemory, ns: str, progress: Any, request: StopRequest
) -> dict[str, Any] | None:
    """Write the namespace's search indexes that are missing or behind (a large
    namespace's vector graph and full-text index, store/sqlite_indexes.py), with a
    progress line each; a stop request abandons them (nothing half-written is kept).
    What was done, or None for a namespace without indexes (small, or PostgreSQL)."""
    tasks: dict[str, Any] = {}

    def tick(kind: str, done: int, total: int) -> None:  # on the build's thread
        if kind not in tasks:
            tasks[kind] = progress.add_task(f"writing the {kind} of {ns}", total=total)
        progress.update(tasks[kind], completed=done, total=total)

    t0 = time.perf_counter()
    request.on_stop = memory.store.abandon_builds
    try:
        model = memory.embedder.model_id
        got = await asyncio.to_thread(memory.store.build_indexes, ns, model, tick)
    finally:
        request.on_stop = None
    if got.abandoned:  # nothing of it is kept: the interrupted summary must not count it
        for task in tasks.values():
            progress.remove_task(task)
    if not (got.vectors or got.documents or got.built or got.failed or got.abandoned):
        return None
    seconds = round(time.perf_counter() - t0, 2)
    return {"namespace": ns, "indexes": got.model_dump(), "seconds": seconds}


def _print_reports(names: list[str], reports: list[dict[str, Any]]) -> None:
    if not names:
        out.print("nothing to build: the store holds no episodes yet (memstrata import)")
    elif not any("builder" in r for r in reports):
        out.print("this recipe builds nothing")
    for r in reports:
        if "indexes" in r:
            _print_indexes(r)
            continue
        figures = ", ".join(f"{k} {v}" for k, v in {**r["counts"], **r["details"]}.items())
        stopped = " (stopped)" if r["stopped"] else ""
        out.print(
            Text(
                f"{r['namespace']} {r['builder']}: tier {r['tier']}, "
                f"{plural(r['episodes'], 'new episode')}, {r['failed']} failed{stopped}; "
                f"{figures}; {r['seconds']} s"
            )
        )
        for stage, row in r["llm"].items():
            per = row["prompt_tokens"] / max(1, r["episodes"])
            out.print(
                f"  {stage}: {plural(row['calls'], 'call')} ({row.get('kept', 0)} kept, "
                f"{row.get('repaired', 0)} repaired, {row['failures']} failed; "
                f"{plural(row.get('truncated', 0), 'item')} cut to a bound, "
                f"{row.get('rejected', 0)} dropped"
                + (f", {row['cut_off']} cut off at the limit" if row.get("cut_off") else "")
                + "), "
                f"{plural(row['prompt_tokens'], 'prompt token')} ({per:.0f} per episode)"
            )
        for e in r["errors"][:5]:
            err.print(Text(f"  {e}", style="yellow"))


def _print_indexes(r: dict[str, Any]) -> None:
    got = r["indexes"]
    held = [
        f"vector graph of {plural(got['vectors'], 'vector')}" if got["vectors"] else None,
        f"full-text index of {plural(got['documents'], 'document')}" if got["documents"] else None,
    ]
    shown = ", ".join(h for h in held if h) or "none"
    how = f"written now: {', '.join(got['built'])}" if got["built"] else "up to date"
    out.print(Text(f"{r['namespace']} search indexes: {shown} ({how}); {r['seconds']} s"))
    if got["abandoned"]:
        err.print(Text("  stopped before the end: nothing of it is kept", style="yellow"))
    for kind in got["failed"]:
        err.print(
            Text(
                f"  the {kind} of {r['namespace']} could not be written (the log above says "
                "why); its searches read every episode until it is",
                style="red",
            )
        )


def _counts(per_builder: dict[str, int]) -> str:
    return ", ".join(f"{plural(n, 'episode')} for {b}" for b, n in per_builder.items())


async def _to_build(memory: AsyncMemory, ns: str, recipe: str | None, rebuild: bool) -> int:
    """Episode steps the build will take: what each builder has pending (all on rebuild)."""
    builders = memory.engine.builders(recipe or memory.config.recipe)
    if rebuild:
        episodes: int = (await memory.stats(ns))["namespaces"][0]["episodes"]
        return episodes * len(builders)
    counts = [await asyncio.to_thread(memory.store.pending_count, ns, b.name) for b in builders]
    return sum(counts)


def _retry_hint(
    failed: list[dict[str, Any]],
    db: str | None,
    config: Path | None,
    recipe: str | None,
    tier: str | None,
) -> str:
    """How to try failed episodes again: retry queues them now, build folds them in."""
    common = f" --db {shlex.quote(db)}" if db else ""
    common += f" --config {shlex.quote(str(config))}" if config else ""
    extra = f" --recipe {shlex.quote(recipe)}" if recipe else ""
    extra += f" --tier {shlex.quote(tier)}" if tier else ""
    n = sum(r["failed"] for r in failed)
    lines = [f"{plural(n, 'episode')} failed; to try {'it' if n == 1 else 'them'} again now:"]
    for ns in dict.fromkeys(r["namespace"] for r in failed):
        lines.append(f"  memstrata retry{common} -n {shlex.quote(ns)}")
        lines.append(f"  memstrata build{common} -n {shlex.quote(ns)}{extra}")
    lines.append(
        "(or `memstrata worker` instead of build; without retry, failed episodes are "
        "tried again after their backoff, up to build.max_attempts)"
    )
    return "\n".join(lines)


@app.command()
def worker(
    db: DbOpt = None,
    namespace: Annotated[
        list[str] | None,
        typer.Option("--namespace", "-n", help="Only these namespaces (repeat). Default: all."),
    ] = None,
    recipe: RecipeOpt = None,
    once: Annotated[
        bool, typer.Option("--once", help="Stop when nothing is pending instead of waiting.")
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Run the build queue: fold newly added episodes into the recipe's structures.

    Runs until stopped by Ctrl-C or SIGTERM, or with --once until nothing is pending
    (exit 0). Ctrl-C or SIGTERM let the batch being written (build.batch_size episodes,
    one transaction) finish, even in the middle of a namespace; the worker then prints
    what it folded in and what is still queued per namespace and builder, and exits 130.
    Running the worker again continues. A second Ctrl-C stops at once, leaving that batch
    unwritten. Safe to kill at any moment too: a restarted worker continues where this
    one stopped.
    """
    with errors():
        cfg = load_config(config)

        async def run() -> tuple[WorkerReport, StopRequest]:
            with stop_on_signals() as request:
                memory = await open_memory(cfg, db, create=True)
                request.on_stop = memory.request_stop
                try:
                    if request.event.is_set():  # during start-up: nothing was begun
                        names = namespace or await memory.namespaces()
                        chosen = recipe or cfg.recipe
                        queued = await asyncio.to_thread(memory.engine.queued, names, chosen)
                        return WorkerReport(stopped=True, queued=queued), request
                    with progress_bar() as progress:
                        tasks: dict[str, Any] = {}

                        def step(ns: str, n: int) -> None:
                            if ns not in tasks:
                                tasks[ns] = progress.add_task(f"folding in {ns}", total=None)
                            progress.advance(tasks[ns], n)

                        report = await memory.work(
                            recipe=recipe, namespaces=namespace, once=once, on_step=step
                        )
                        return report, request
                finally:
                    await memory.close()

        report, request = asyncio.run(run())
    out.print(
        f"worker: {plural(report.episodes, 'episode')} folded in, {report.failed} failed, "
        f"{plural(report.rounds, 'round')}"
    )
    for ns, written in report.indexes.items():
        out.print(Text(f"search indexes of {ns} written: {', '.join(written)}"))
    again = "memstrata worker" + _options(db, config, recipe)
    again += "".join(f" -n {shlex.quote(ns)}" for ns in namespace or [])
    again += " --once" if once else ""
    if request.event.is_set():
        fail(_worker_stopped(report, request, again), "Interrupted", label="interrupted")
        raise typer.Exit(130)
    if report.unreachable:
        err.print(Text(_unreachable_hint(report.unreachable, report.queued, again), style="red"))
        raise typer.Exit(1)


def _worker_stopped(report: WorkerReport, request: StopRequest, again: str) -> str:
    """What a stopped worker committed, what it left queued and how to go on."""
    lines = [
        f"stopped by {request.signal} after the current batch; the "
        f"{plural(report.episodes, 'episode')} folded in "
        f"{'is' if report.episodes == 1 else 'are'} committed"
    ]
    for ns, per in report.queued.items():
        lines.append(f"  still queued in {ns}: {_counts(per)}")
    if not report.queued:
        lines.append("  nothing is queued")
    for ns, name in report.unfinished:
        if name not in report.queued.get(ns, {}):
            lines.append(f"  {ns} {name}: its finishing step runs at the next build or worker")
    lines.append(f"  run the worker again to continue: {again}")
    return "\n".join(lines)


def _options(db: str | None, config: Path | None, recipe: str | None) -> str:
    """The --db, --config and --recipe options of a command to run next."""
    opts = f" --db {shlex.quote(db)}" if db else ""
    opts += f" --config {shlex.quote(str(config))}" if config else ""
    return opts + (f" --recipe {shlex.quote(recipe)}" if recipe else "")


@app.command()
def retry(
    db: DbOpt = None,
    namespace: NsOpt = None,
    builder: Annotated[str | None, typer.Option(help="Only this builder's failures.")] = None,
    config: ConfigOpt = None,
) -> None:
    """Queue failed enrichments again (also those that used up their attempts)."""
    with errors():
        cfg = load_config(config)

        async def run() -> int:
            memory = await open_memory(cfg, db)
            try:
                return await memory.retry(namespace, builder=builder)
            finally:
                await memory.close()

        n = asyncio.run(run())
    out.print(f"{plural(n, 'episode')} queued again; run `memstrata build` or a worker")


@app.command()
def show(
    name: Annotated[str, typer.Argument(help="Name of a structure (case-insensitive).")],
    db: DbOpt = None,
    namespace: NsOpt = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help=f'The trees as a JSON list of {{"design", "text", "children"}}; {JSON_ERRORS}.',
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Show what the designs hold under a name: a category subtree, an entity with its
    facts and source episodes, ...

    On a terminal, a tree whose long lines wrap; otherwise (a pipe, a file) the same
    tree with every line whole."""
    with errors(as_json=as_json):
        cfg = load_config(config)
        ns = cfg.namespace if namespace is None else namespace

        async def run() -> Any:
            memory = await open_memory(cfg, db)
            try:
                return await memory.show(name, namespace=ns)
            finally:
                await memory.close()

        nodes = asyncio.run(run())
        if not nodes:
            raise MemstrataError(f"nothing named {name!r} in namespace {ns!r}")
    if as_json:
        rows = [n.model_dump(include={"design", "text", "children"}) for n in nodes]
        sys.stdout.write(json.dumps(rows, ensure_ascii=False) + "\n")
        return
    print_tree(nodes)
