"""``memstrata bench faults``: crash and concurrency runs on real processes."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from memstrata.cli.common import bench_app, err, errors, out, progress_bar


@bench_app.command("faults")
def bench_faults(
    runs: Annotated[
        int,
        typer.Option(
            min=0, help="SIGKILLs per operation, each at a seeded random point (0: none)."
        ),
    ] = 20,
    concurrency_seconds: Annotated[
        float,
        typer.Option(
            min=0,
            help="How long the 4 writers, 2 workers and the searcher run together (0: skip).",
        ),
    ] = 60.0,
    operations: Annotated[
        str,
        typer.Option(
            help="Operations to kill, comma-separated: import, build:RECIPE, worker, update, "
            "delete (default: all, with build of every built-in recipe)."
        ),
    ] = "",
    turns: Annotated[int, typer.Option(min=10, help="Turns of the synthetic conversation.")] = 120,
    recipe: Annotated[
        str, typer.Option(help="Recipe the concurrency run's workers and searcher use.")
    ] = "mnemis",
    seed: Annotated[int, typer.Option(help="Seed of the data and of the kill points.")] = 7,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where to write faults.json and faults.md.")
    ] = Path("bench-out"),
    keep: Annotated[
        Path | None, typer.Option(help="Keep the stores and logs of every run here.")
    ] = None,
    store: Annotated[
        str,
        typer.Option(
            help="sqlite (files), or postgres: a local PostgreSQL server started for the run "
            "(pip install 'memstrata[postgres]')."
        ),
    ] = "sqlite",
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="A PostgreSQL server to run on instead (postgresql://USER:PW@HOST/DB; the "
            "user must be allowed to create databases; each run gets its own, dropped after).",
        ),
    ] = None,
) -> None:
    """Kill real memstrata processes (SIGKILL) mid-work, finish the work, count the damage.

    Each operation (import of a JSONL conversation, build of each recipe, the queue
    worker, update, delete) runs as its own process on a real store (SQLite, or a
    database of its own on PostgreSQL with --store postgres or --db URL) and is killed
    once it has made progress (episodes or done marks committed, the removal committed)
    or after a random delay. The same command is then run again, the recipes built, and
    the store checked: every episode present once with its content, no duplicated
    derived record, no orphan, every link and source pointing at something that exists,
    nothing left queued or unrepaired, and each design's own structural checks.

    Then 4 writer processes add episodes, 2 workers build them and a searcher searches,
    all at once for --concurrency-seconds: every add must be visible exactly once and no
    process may report an error.

    Prints the table and writes faults.json (every run, with what it found) and
    faults.md. Heuristic tier, no LLM and no data set needed. Exits 1 if anything was
    lost, duplicated, orphaned or broken.
    """
    from memstrata.embed import MiniLMEmbedder
    from memstrata.eval import bench_faults as bf
    from memstrata.eval import faults
    from memstrata.eval.sites import open_site
    from memstrata.store import is_postgres

    wanted = [o.strip() for o in operations.split(",") if o.strip()] or list(faults.OPERATIONS)
    known = {*faults.OPERATIONS, *(f"build:{r}" for r in faults.RECIPES)}
    unknown = [o for o in wanted if o not in known]
    if unknown:
        err.print(
            f"error: unknown {'operation' if len(unknown) == 1 else 'operations'} "
            f"{', '.join(unknown)}; known: "
            f"{', '.join(faults.OPERATIONS)}",
            markup=False,
        )
        raise typer.Exit(2)
    if store not in ("sqlite", "postgres") or (db is not None and not is_postgres(db)):
        err.print("error: --store is sqlite or postgres; --db a postgresql:// URL", markup=False)
        raise typer.Exit(2)
    with tempfile.TemporaryDirectory() as tmp, errors():
        workdir = keep or Path(tmp)
        site = open_site(store, workdir, db=db, keep=keep is not None)
        with site as where, progress_bar() as progress:
            task = progress.add_task("killing", total=runs * len(wanted))
            report = bf.run(
                workdir,
                MiniLMEmbedder(),
                runs=runs,
                concurrency_seconds=concurrency_seconds,
                operations=wanted,
                turns=turns,
                seed=seed,
                recipe=recipe,
                progress=lambda n: progress.advance(task, n),
                site=where,
            )
        jpath, mpath = bf.write(report, out_dir)
    sys.stdout.write(bf.markdown(report))
    out.print(f"written {jpath} and {mpath}", markup=False)
    if bf.failed(report):
        raise typer.Exit(1)
