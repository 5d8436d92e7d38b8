"""``memstrata bench store``: SQLite and PostgreSQL on the same data in one run."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import TaskID

from memstrata.cli.common import bench_app, err, errors, out, progress_bar


@bench_app.command("store")
def bench_store(
    episodes: Annotated[int, typer.Option(min=1, help="Episodes in the one namespace.")] = 100_000,
    stores: Annotated[
        str, typer.Option(help="Stores to run, comma-separated, in order: sqlite, postgres.")
    ] = "sqlite,postgres",
    queries: Annotated[int, typer.Option(min=1, help="Queries to time on each store.")] = 200,
    data: Annotated[
        Path | None,
        typer.Option(help="A JSONL file of import lines to use (its first --episodes lines)."),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="A PostgreSQL server to use (postgresql://USER:PW@HOST/DB; a database "
            "memstrata_store_bench is made there and dropped after). Default: a local server "
            "started for the run.",
        ),
    ] = None,
    embeddings: Annotated[
        Path | None,
        typer.Option(help="Keep the computed embeddings in this .npy file, for the next run."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic data.")] = 7,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where to write store.json and store.md.")
    ] = Path("bench-out"),
) -> None:
    """Ingest rate and search latency (p50/p95) of each store on the same episodes.

    The episodes are embedded once first (the default embedder; --embeddings keeps the
    vectors for the next run), so the ingest rate is the store's own: validation, episodes
    and the full-text index, in batches of 512. Each query is then timed alone on each
    store, embedded for real: rag (dense + BM25 fused), default, and BM25 and dense alone.
    """
    from memstrata.embed import MiniLMEmbedder
    from memstrata.eval import bench_store as bs

    kinds = [s.strip() for s in stores.split(",") if s.strip()]
    if not kinds or any(k not in ("sqlite", "postgres") for k in kinds):
        err.print("error: --stores takes sqlite and/or postgres", markup=False)
        raise typer.Exit(2)
    with tempfile.TemporaryDirectory() as tmp, errors(), progress_bar() as progress:
        tasks: dict[str, TaskID] = {}

        def advance(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total)
            progress.update(tasks[stage], completed=done)

        report = bs.run(
            Path(tmp),
            MiniLMEmbedder(),
            n=episodes,
            stores=kinds,
            n_queries=queries,
            seed=seed,
            data=data,
            db=db,
            cache=embeddings,
            progress=advance,
        )
        jpath, mpath = bs.write(report, out_dir)
    sys.stdout.write(bs.markdown(report))
    out.print(f"written {jpath} and {mpath}", markup=False)


@bench_app.command("delete")
def bench_delete(
    sizes: Annotated[
        str, typer.Option(help="Store sizes in episodes, comma-separated.")
    ] = "1000,10000,100000",
    deletes: Annotated[int, typer.Option(min=1, help="Deletes timed per size and path.")] = 15,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic data and the picks.")] = 7,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where to write delete.json and delete.md.")
    ] = Path("bench-out"),
) -> None:
    """What erasing costs a delete: the median ms of deleting one episode from SQLite
    stores of each size, as b79802d deleted (rows and FTS5 tombstones) and as memstrata
    deletes now (the text erased from every file), alternately in one run."""
    from memstrata.eval import bench_delete as bd

    try:
        wanted = [int(s) for s in sizes.split(",") if s.strip()]
    except ValueError:
        wanted = []
    if not wanted or min(wanted) < 1:
        err.print("error: --sizes takes positive whole numbers, e.g. 1000,10000", markup=False)
        raise typer.Exit(2)
    with tempfile.TemporaryDirectory() as tmp, errors():
        report = bd.run(Path(tmp), wanted, deletes, seed, progress=lambda m: err.print(m))
        jpath, mpath = bd.write(report, out_dir)
    sys.stdout.write(bd.markdown(report))
    err.print(f"wrote {jpath} and {mpath}")


@bench_app.command("integrations")
def bench_integrations(
    items: Annotated[int, typer.Option(min=1, help="Items written by each path.")] = 200,
    queries: Annotated[int, typer.Option(min=1, help="Gets and searches timed.")] = 50,
    adapter: Annotated[
        list[str] | None,
        typer.Option("--adapter", help="An adapter to measure (repeat; default: all)."),
    ] = None,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where to write integrations.json and .md.")
    ] = Path("bench-out"),
) -> None:
    """What each framework adapter adds over the bare verbs (p50 and p95 ms of put, get
    and search), in process and over REST to a `memstrata serve` child.

    Example: memstrata bench integrations --adapter langgraph --items 200 --queries 50
    """
    from memstrata.eval import bench_integrations as bi

    with tempfile.TemporaryDirectory() as tmp, errors():
        report = bi.run(Path(tmp), n=items, queries=queries, adapters=adapter)
        jpath, mpath = bi.write(report, out_dir)
    sys.stdout.write(bi.markdown(report))
    out.print(f"written {jpath} and {mpath}", markup=False)
