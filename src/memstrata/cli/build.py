"""``memstrata build``, ``worker``, ``retry`` and ``show``: the structures of a recipe."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from typing import Annotated, Any

import typer
from rich.text import Text

from memstrata.cli.common import (
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


@app.command()
def build(
    db: DbOpt = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Namespace (default: every one).")
    ] = None,
    recipe: RecipeOpt = None,
    tier: TierOpt = None,
    rebuild: Annotated[bool, typer.Option(help="Drop the structures and build anew.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    config: ConfigOpt = None,
) -> None:
    """Fold every pending episode into a recipe's structures.

    Resumable: only episodes not yet built are processed, so re-running after an
    interruption, or after importing more, continues where it stopped. If another
    process is building the same namespace, this waits for it (build.wait_s). Prints
    counts and LLM cost per stage; exits 1 if an episode failed.
    """
    with errors():
        cfg = load_config(config)

        async def run() -> list[dict[str, Any]]:
            memory = await open_memory(cfg, db)
            try:
                names = [namespace] if namespace else await memory.namespaces()
                reports: list[dict[str, Any]] = []
                with progress_bar() as progress:
                    for ns in names:
                        total = (await memory.stats(ns))["namespaces"][0]["episodes"]
                        task = progress.add_task(f"building {ns}", total=total)

                        def advance(n: int, task: Any = task) -> None:
                            progress.advance(task, n)

                        got = await memory.build(
                            ns, recipe=recipe, tier=tier, rebuild=rebuild, progress=advance
                        )
                        reports.extend(r.model_dump() for r in got)
                return reports
            finally:
                await memory.close()

        reports = asyncio.run(run())
    if as_json:
        sys.stdout.write(json.dumps(reports, indent=2, default=str) + "\n")
    else:
        if not reports:
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
    if any(r["failed"] for r in reports):
        raise typer.Exit(1)


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
            memory = await open_memory(cfg, db)
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, memory.request_stop)
            try:
                return await memory.work(
                    recipe=recipe,
                    namespaces=namespace,
                    once=once,
                    on_step=lambda ns, n: err.print(Text(f"{ns}: {n} episode(s) folded in")),
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
