"""``memstrata bench ...``: benchmarks that print numbers (and write JSON and Markdown)."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from memstrata.cli.common import ConfigOpt, bench_app, err, errors, load_config, out, progress_bar
from memstrata.memory import AsyncMemory


@bench_app.command("locomo")
def bench_locomo(
    file: Annotated[Path, typer.Argument(help="LoCoMo JSON file.", exists=True, dir_okay=False)],
    db: Annotated[
        str | None, typer.Option("--db", help="Store (default: a fresh temp file).")
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Where to write locomo.json/.md.")] = Path(
        "bench-out"
    ),
    recipe: Annotated[
        str, typer.Option(help="Recipes under test, comma-separated (e.g. default,mnemis).")
    ] = "default",
    config: ConfigOpt = None,
) -> None:
    """Evidence Recall@K / Precision@K per category, beside flat BM25 and flat RAG.

    Recipes that build structures are built first, with the configured tier.
    """
    from memstrata.eval import bench_locomo as bl

    with tempfile.TemporaryDirectory() as tmp, errors():
        cfg = load_config(config)
        path = db or str(Path(tmp) / "locomo.db")
        wanted = [r.strip() for r in recipe.split(",") if r.strip()]
        systems = ["bm25", "rag"] + [r for r in wanted if r not in {"bm25", "rag"}]

        async def run() -> dict[str, Any]:
            memory = await AsyncMemory.open(path, config=cfg)
            try:
                with progress_bar() as progress:
                    task = progress.add_task("importing", total=None)
                    return await bl.run(
                        memory, file, systems, progress=lambda n: progress.advance(task, n)
                    )
            finally:
                await memory.close()

        report = asyncio.run(run())
        jpath, mpath = bl.write(report, out_dir)
    sys.stdout.write(bl.markdown(report))
    out.print(f"written {jpath} and {mpath}")


@bench_app.command("hotpotqa")
def bench_hotpotqa(
    path: Annotated[
        Path,
        typer.Argument(
            help="Directory with hotpotqa_train.json and its _corpus.json, or the questions file.",
            exists=True,
        ),
    ],
    corpus: Annotated[
        Path | None, typer.Option(help="Corpus file {title: [sentences]} (default: beside it).")
    ] = None,
    recipe: Annotated[
        str, typer.Option(help="Recipes compared, comma-separated (e.g. rag,default).")
    ] = "rag,default",
    db: Annotated[
        str | None, typer.Option("--db", help="Store (default: a fresh temp file).")
    ] = None,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where to write hotpotqa.json/.md.")
    ] = Path("bench-out"),
    config: ConfigOpt = None,
) -> None:
    """Supporting-passage Recall@2/5/10 and both-found@K per recipe, one passage per
    episode, with search latency; recipes that build structures are built first."""
    from memstrata.eval import hotpotqa as hq

    with tempfile.TemporaryDirectory() as tmp, errors():
        cfg = load_config(config)
        questions_path, corpus_path = hq.resolve_paths(path, corpus)
        store = db or str(Path(tmp) / "hotpotqa.db")
        recipes = [r.strip() for r in recipe.split(",") if r.strip()]

        async def run() -> dict[str, Any]:
            memory = await AsyncMemory.open(store, config=cfg)
            try:
                with progress_bar() as progress:
                    task = progress.add_task("importing", total=None)
                    return await hq.run(
                        memory,
                        questions_path,
                        corpus_path,
                        recipes,
                        progress=lambda n: progress.advance(task, n),
                    )
            finally:
                await memory.close()

        report = asyncio.run(run())
        jpath, mpath = hq.write(report, out_dir)
    sys.stdout.write(hq.markdown(report))
    out.print(f"written {jpath} and {mpath}", markup=False)


@bench_app.command("build")
def bench_build(
    file: Annotated[Path, typer.Argument(help="LoCoMo JSON file.", exists=True, dir_okay=False)],
    recipe: Annotated[str, typer.Option(help="Recipe whose builders to measure.")] = "mnemis",
    conversation: Annotated[str, typer.Option(help="Which conversation to slice.")] = "conv-26",
    turns: Annotated[int, typer.Option(help="Turns imported and built first.")] = 60,
    inserts: Annotated[
        int, typer.Option(help="Turns then added one by one, each with an incremental build.")
    ] = 0,
    tier: Annotated[
        str | None,
        typer.Option(help="heuristic or llm; llm without a configured LLM uses the bundled GGUF."),
    ] = None,
    db: Annotated[
        str | None, typer.Option("--db", help="Store (default: a fresh temp file).")
    ] = None,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where to write build-RECIPE.json/.md.")
    ] = Path("bench-out"),
    config: ConfigOpt = None,
) -> None:
    """Build cost of a recipe on a slice of one conversation: seconds, LLM calls and
    tokens per turn per stage, the builders' invariants checked, and single-episode
    insert latency (p50/p95) beside add alone."""
    from memstrata.eval import bench_build as bb

    with tempfile.TemporaryDirectory() as tmp, errors():
        cfg = load_config(config, **{"build.mode": "manual"})
        if tier == "llm" and cfg.llm.kind == "none":
            cfg.llm.kind = "gguf"
        path = db or str(Path(tmp) / "build.db")

        async def run() -> dict[str, Any]:
            memory = await AsyncMemory.open(path, config=cfg)
            try:
                with progress_bar() as progress:
                    task = progress.add_task("building", total=turns)
                    return await bb.run(
                        memory,
                        file,
                        recipe=recipe,
                        conversation=conversation,
                        turns=turns,
                        inserts=inserts,
                        tier=tier,
                        progress=lambda n: progress.advance(task, n),
                    )
            finally:
                await memory.close()

        try:
            report = asyncio.run(run())
        except ValueError as exc:
            err.print(f"error: {exc}", markup=False)
            raise typer.Exit(2) from None
        jpath, mpath = bb.write(report, out_dir)
    sys.stdout.write(bb.markdown(report))
    out.print(f"written {jpath} and {mpath}", markup=False)


@bench_app.command("scale")
def bench_scale(
    n: Annotated[int, typer.Option("--n", help="Synthetic episodes to ingest.")] = 100_000,
    queries: Annotated[int, typer.Option(help="Queries to time.")] = 200,
    db: Annotated[
        str | None, typer.Option("--db", help="Store (default: a fresh temp file).")
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out")] = Path("bench-out"),
    seed: Annotated[int, typer.Option(help="Random seed of the synthetic data.")] = 7,
) -> None:
    """Ingest throughput, p50/p95 search latency and bytes per episode on synthetic data."""
    from memstrata.eval import bench_scale as bs

    with tempfile.TemporaryDirectory() as tmp, errors():
        path = db or str(Path(tmp) / "scale.db")
        with progress_bar() as progress:
            task = progress.add_task("ingesting", total=n)
            report = bs.run(
                path,
                n=n,
                n_queries=queries,
                seed=seed,
                progress=lambda k: progress.advance(task, k),
            )
        jpath, mpath = bs.write(report, out_dir)
    sys.stdout.write(bs.markdown(report))
    out.print(f"written {jpath} and {mpath}")


@bench_app.command("routes")
def bench_routes(
    recipe: Annotated[str, typer.Option(help="Recipes whose routes to time, comma-separated.")],
    episodes: Annotated[int, typer.Option(help="Synthetic episodes to build from.")] = 2000,
    queries: Annotated[int, typer.Option(help="Queries to time.")] = 100,
    db: Annotated[
        str | None, typer.Option("--db", help="Store (default: a fresh temp file).")
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out")] = Path("bench-out"),
    seed: Annotated[int, typer.Option(help="Random seed of the synthetic data.")] = 7,
    config: ConfigOpt = None,
) -> None:
    """Each route's own p50/p95 latency, one query at a time, on structures built from
    synthetic episodes (heuristic tier); with what the builders report they built."""
    from memstrata.eval import bench_routes as br

    with tempfile.TemporaryDirectory() as tmp, errors():
        cfg = load_config(config, **{"llm.kind": "none"})
        store = db or str(Path(tmp) / "routes.db")
        recipes = [r.strip() for r in recipe.split(",") if r.strip()]

        async def run() -> dict[str, Any]:
            memory = await AsyncMemory.open(store, config=cfg)
            try:
                with progress_bar() as progress:
                    task = progress.add_task("ingesting", total=episodes)
                    return await br.run(
                        memory,
                        recipes,
                        episodes,
                        queries,
                        seed=seed,
                        progress=lambda n: progress.advance(task, n),
                    )
            finally:
                await memory.close()

        report = asyncio.run(run())
        jpath, mpath = br.write(report, out_dir)
    sys.stdout.write(br.markdown(report))
    out.print(f"written {jpath} and {mpath}", markup=False)


@bench_app.command("inline")
def bench_inline(
    file: Annotated[Path, typer.Argument(help="LoCoMo JSON file.", exists=True, dir_okay=False)],
    recipe: Annotated[str, typer.Option(help="Recipe whose builders run inline.")] = "mnemis",
    conversation: Annotated[
        str | None, typer.Option(help="Conversation for the bulk step (default: the first).")
    ] = None,
    size: Annotated[int, typer.Option(help="Episodes in the large namespace.")] = 5000,
    adds: Annotated[int, typer.Option(help="Single adds timed, per mode.")] = 100,
    out_dir: Annotated[Path, typer.Option("--out")] = Path("bench-out"),
    config: ConfigOpt = None,
) -> None:
    """Cost of keeping structures current on add (build.mode inline, heuristic tier):
    add_many of a conversation against add_many + build, and single-add p50/p95 on a
    large namespace against add alone."""
    from memstrata.eval import bench_inline as bi

    with tempfile.TemporaryDirectory() as tmp, errors():
        cfg = load_config(config, **{"llm.kind": "none"})

        async def run() -> dict[str, Any]:
            with progress_bar() as progress:
                task = progress.add_task("filling", total=size)
                return await bi.run(
                    file,
                    tmp,
                    cfg,
                    recipe=recipe,
                    conversation=conversation,
                    size=size,
                    adds=adds,
                    progress=lambda n: progress.advance(task, n),
                )

        try:
            report = asyncio.run(run())
        except ValueError as exc:
            err.print(f"error: {exc}", markup=False)
            raise typer.Exit(2) from None
        jpath, mpath = bi.write(report, out_dir)
    sys.stdout.write(bi.markdown(report))
    out.print(f"written {jpath} and {mpath}", markup=False)
