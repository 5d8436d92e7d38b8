"""``memstrata build``, ``worker``, ``retry`` and ``show``: the structures of a recipe."""

from __future__ import annotations

import asyncio
import json
import shlex
import signal
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
    TierOpt,
    app,
    err,
    errors,
    load_config,
    open_memory,
    out,
    print_tree,
    progress_bar,
)
from memstrata.errors import MemstrataError
from memstrata.memory import AsyncMemory


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
        bool, typer.Option("--json", help=f"The reports as JSON; {JSON_ERRORS}.")
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Fold every pending episode into a recipe's structures.

    Resumable: only episodes not yet built are processed, so re-running after an
    interruption (Ctrl-C), or after importing more, continues where it stopped. If another
    process is building the same namespace, this waits for it (build.wait_s). Prints
    counts and LLM cost per stage. Exits 1 if an episode failed, and says how to try it
    again (`memstrata retry`, then build or a worker).
    """
    with errors(as_json=as_json):
        cfg = load_config(config)

        async def run() -> tuple[list[str], list[dict[str, Any]]]:
            # A path without a store has nothing to build: say so, create nothing.
            memory = await open_memory(cfg, db)
            try:
                names = [namespace] if namespace else await memory.namespaces()
                reports: list[dict[str, Any]] = []
                with progress_bar() as progress:
                    for ns in names:
                        total = await _to_build(memory, ns, recipe, rebuild)
                        task = progress.add_task(f"building {ns}", total=total)

                        def advance(n: int, task: Any = task) -> None:
                            progress.advance(task, n)

                        got = await memory.build(
                            ns, recipe=recipe, tier=tier, rebuild=rebuild, progress=advance
                        )
                        reports.extend(r.model_dump() for r in got)
                return names, reports
            finally:
                await memory.close()

        names, reports = asyncio.run(run())
    if as_json:
        sys.stdout.write(json.dumps(reports, indent=2, default=str) + "\n")
    else:
        if not names:
            out.print("nothing to build: the store holds no episodes yet (memstrata import)")
        elif not reports:
            out.print("this recipe builds nothing")
        for r in reports:
            figures = ", ".join(f"{k} {v}" for k, v in {**r["counts"], **r["details"]}.items())
            out.print(
                Text(
                    f"{r['namespace']} {r['builder']}: tier {r['tier']}, {r['episodes']} new "
                    f"episodes, {r['failed']} failed; {figures}; {r['seconds']} s"
                )
            )
            for stage, row in r["llm"].items():
                per = row["prompt_tokens"] / max(1, r["episodes"])
                out.print(
                    f"  {stage}: {row['calls']} calls, {row['failures']} failures, "
                    f"{row['prompt_tokens']} prompt tokens ({per:.0f} per episode)"
                )
            for e in r["errors"][:5]:
                err.print(Text(f"  {e}", style="yellow"))
    failed = [r for r in reports if r["failed"]]
    if failed:
        err.print(Text(_retry_hint(failed, db, config, recipe, tier), style="red"))
        raise typer.Exit(1)


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
    lines = [f"{sum(r['failed'] for r in failed)} episode(s) failed; to try them again now:"]
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

    Runs until interrupted (Ctrl-C or SIGTERM stop it after the current step), or with
    --once until nothing is pending. Safe to kill at any moment: each step is one
    transaction, and a restarted worker continues where this one stopped.
    """
    with errors():
        cfg = load_config(config)

        async def run() -> Any:
            memory = await open_memory(cfg, db, create=True)
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, memory.request_stop)
            try:
                with progress_bar() as progress:
                    tasks: dict[str, Any] = {}

                    def step(ns: str, n: int) -> None:
                        if ns not in tasks:
                            tasks[ns] = progress.add_task(f"folding in {ns}", total=None)
                        progress.advance(tasks[ns], n)

                    return await memory.work(
                        recipe=recipe, namespaces=namespace, once=once, on_step=step
                    )
            finally:
                await memory.close()

        report = asyncio.run(run())
    out.print(
        f"worker: {report.episodes} episode(s) folded in, {report.failed} failed, "
        f"{report.rounds} round(s)"
    )


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
    out.print(f"{n} episode(s) queued again; run `memstrata build` or a worker")


@app.command()
def show(
    name: Annotated[str, typer.Argument(help="Name of a structure (case-insensitive).")],
    db: DbOpt = None,
    namespace: NsOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Show what the designs hold under a name: a category subtree, an entity with its
    facts and source episodes, ..."""
    with errors():
        cfg = load_config(config)
        ns = namespace or cfg.namespace

        async def run() -> Any:
            memory = await open_memory(cfg, db)
            try:
                return await memory.show(name, namespace=ns)
            finally:
                await memory.close()

        nodes = asyncio.run(run())
        if not nodes:
            raise MemstrataError(f"nothing named {name!r} in namespace {ns!r}")
    print_tree(nodes)
