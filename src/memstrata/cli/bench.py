"""``memstrata bench ...``: benchmarks that print numbers (and write JSON and Markdown)."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from memstrata.cli.common import ConfigOpt, bench_app, err, errors, load_config, out, progress_bar
from memstrata.config import Config
from memstrata.memory import AsyncMemory

Job = Callable[[AsyncMemory, Callable[[int], None]], Awaitable[dict[str, Any]]]


def run_on_memory(
    path: str, cfg: Config, label: str, total: int | None, job: Job
) -> dict[str, Any]:
    """Open a memory, run ``job`` on it under a progress bar, close it; a ValueError the
    benchmark raises for its arguments is one line and exit status 2."""

    async def run() -> dict[str, Any]:
        memory = await AsyncMemory.open(path, config=cfg)
        try:
            with progress_bar() as progress:
                task = progress.add_task(label, total=total)
                return await job(memory, lambda n: progress.advance(task, n))
        finally:
            await memory.close()

    try:
        return asyncio.run(run())
    except ValueError as exc:
        err.print(f"error: {exc}", markup=False)
        raise typer.Exit(2) from None


def emit(markdown: str, paths: tuple[Path, Path]) -> None:
    sys.stdout.write(markdown)
    out.print(f"written {paths[0]} and {paths[1]}", markup=False)


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
        report = run_on_memory(
            path, cfg, "importing", None, lambda m, tick: bl.run(m, file, systems, progress=tick)
        )
        paths = bl.write(report, out_dir)
    emit(bl.markdown(report), paths)


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
        report = run_on_memory(
            store,
            cfg,
            "importing",
            None,
            lambda m, tick: hq.run(m, questions_path, corpus_path, recipes, progress=tick),
        )
        paths = hq.write(report, out_dir)
    emit(hq.markdown(report), paths)


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
        report = run_on_memory(
            path,
            cfg,
            "building",
            turns,
            lambda m, tick: bb.run(
                m,
                file,
                recipe=recipe,
                conversation=conversation,
                turns=turns,
                inserts=inserts,
                tier=tier,
                progress=tick,
            ),
        )
        paths = bb.write(report, out_dir)
    emit(bb.markdown(report), paths)


@bench_app.command("growth")
def bench_growth(
    recipe: Annotated[str, typer.Option(help="Recipe whose builders to measure.")] = "memtree",
    sizes: Annotated[
        str, typer.Option(help="Memory sizes, comma-separated, at which inserts are timed.")
    ] = "100,1000,10000",
    inserts: Annotated[int, typer.Option(help="Single inserts timed at each size.")] = 50,
    tier: Annotated[
        str | None,
        typer.Option(help="heuristic or llm; llm without a configured LLM uses the bundled GGUF."),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(help="JSONL episodes (import format) instead of synthetic chat turns."),
    ] = None,
    db: Annotated[
        str | None, typer.Option("--db", help="Store (default: a fresh temp file).")
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out")] = Path("bench-out"),
    config: ConfigOpt = None,
) -> None:
    """Insert cost against memory size: add and build p50/p95, LLM calls and prompt
    tokens per insert, and the builders' structure figures, at each size."""
    from memstrata.eval import bench_growth as bg

    with tempfile.TemporaryDirectory() as tmp, errors():
        cfg = load_config(config, **{"build.mode": "manual"})
        if tier == "llm" and cfg.llm.kind == "none":
            cfg.llm.kind = "gguf"
        path = db or str(Path(tmp) / "growth.db")
        try:
            wanted = [int(s) for s in sizes.split(",") if s.strip()]
        except ValueError:
            err.print(f"error: --sizes must be integers, got {sizes!r}", markup=False)
            raise typer.Exit(2) from None

        report = run_on_memory(
            path,
            cfg,
            "filling",
            wanted[-1] if wanted else None,
            lambda m, tick: bg.run(
                m,
                recipe=recipe,
                sizes=wanted,
                inserts=inserts,
                tier=tier,
                data=data,
                progress=tick,
            ),
        )
        paths = bg.write(report, out_dir)
    emit(bg.markdown(report), paths)


@bench_app.command("scale")
def bench_scale(
    sizes: Annotated[
        str,
        typer.Option(
            help="Episode counts to measure at, increasing, comma-separated; the store "
            "grows from one to the next."
        ),
    ] = "10000,100000",
    data: Annotated[
        list[str] | None,
        typer.Option(
            help="FORMAT:PATH of a data set whose turns (repeated with variations) and "
            "questions to use instead of synthetic ones, e.g. "
            "locomo:../shared/data/locomo/locomo-dev.json or qaset:realtalk-dev.json; "
            "may be given several times."
        ),
    ] = None,
    queries: Annotated[int, typer.Option(help="Queries to time.")] = 200,
    ann_threshold: Annotated[
        int | None,
        typer.Option(help="Vectors from which a namespace gets its approximate index."),
    ] = None,
    text_threshold: Annotated[
        int | None,
        typer.Option(help="Documents from which a namespace gets its full-text index."),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Store (default: a fresh temp file). A store kept by an earlier run with "
            "the same data and seed is continued: sizes it holds are measured without "
            "an ingest.",
        ),
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out")] = Path("bench-out"),
    seed: Annotated[int, typer.Option(help="Random seed of the data and the queries.")] = 7,
) -> None:
    """Ingest rate beside the bare embedder's, search p50/p95 (hybrid, BM25 alone, dense as
    served and exact), the approximate indexes' agreement with the exact path, open time and
    bytes per episode, at each size of one growing namespace."""
    from memstrata.eval import bench_scale as bs

    try:
        counts = [int(x.replace("_", "")) for x in sizes.split(",") if x.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"whole numbers separated by commas, not {sizes!r}") from exc
    if not counts or sorted(counts) != counts or counts[0] < 1:
        raise typer.BadParameter(f"--sizes must be increasing and positive, not {sizes!r}")
    sets = []
    for item in data or []:
        fmt, _, where = item.partition(":")
        if not where:
            raise typer.BadParameter(f"--data takes FORMAT:PATH, not {item!r}")
        sets.append((where, fmt))
    with tempfile.TemporaryDirectory() as tmp, errors():
        path = db or str(Path(tmp) / "scale.db")
        with progress_bar() as progress:
            task = progress.add_task("ingesting", total=counts[-1] if counts else 0)
            report = bs.run(
                path,
                sizes=counts,
                n_queries=queries,
                seed=seed,
                data=sets,
                ann_threshold=ann_threshold,
                text_threshold=text_threshold,
                progress=lambda k: progress.advance(task, k),
                checkpoint=lambda partial: bs.write(partial, out_dir),
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
        report = run_on_memory(
            store,
            cfg,
            "ingesting",
            episodes,
            lambda m, tick: br.run(m, recipes, episodes, queries, seed=seed, progress=tick),
        )
        paths = br.write(report, out_dir)
    emit(br.markdown(report), paths)


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


@bench_app.command("longturn")
def bench_longturn(
    recipe: Annotated[str, typer.Option(help="Comma-separated recipes to compare.")] = ("default"),
    turns: Annotated[int, typer.Option(help="Turns of about 2,800 characters.")] = 188,
    questions: Annotated[int, typer.Option(help="Planted questions to time.")] = 60,
    profile: Annotated[
        str | None, typer.Option(help="Recipe whose timed pass is profiled (cProfile).")
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out")] = Path("bench-out"),
) -> None:
    """Warm search p50/p95 and Recall@10 on a generated chat of long user/assistant turns."""
    from memstrata.eval import bench_longturn as bl

    with tempfile.TemporaryDirectory() as tmp, errors():
        recipes = [r.strip() for r in recipe.split(",") if r.strip()]
        report = bl.run(str(Path(tmp) / "long.db"), recipes, turns, questions, profile)
        jpath, mpath = bl.write(report, out_dir)
    sys.stdout.write(bl.markdown(report))
    out.print(f"written {jpath} and {mpath}", markup=False)


@bench_app.command("reader")
def bench_reader(
    file: Annotated[Path, typer.Argument(help="The data file.", exists=True, dir_okay=False)],
    fmt: Annotated[
        str, typer.Option("--format", help="locomo, longmemeval or qaset (as bench qa).")
    ] = "locomo",
    design: Annotated[
        str | None, typer.Option(help="Design whose reader to use (default: the only one).")
    ] = None,
    tier: Annotated[str, typer.Option(help="heuristic or llm.")] = "heuristic",
    baseline: Annotated[str, typer.Option(help="Recipe compared at the same budget.")] = "default",
    limit: Annotated[int | None, typer.Option(help="Questions per sample (default: all).")] = None,
    db: Annotated[
        str | None, typer.Option("--db", help="Store (default: a fresh temp file).")
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Where to write reader.json/.md.")] = Path(
        "bench-out"
    ),
    config: ConfigOpt = None,
) -> None:
    """A reader on each sample (a conversation, a corpus) read as one document with its
    answerable questions: compaction
    ratio per question, evidence recall of the returned windows beside a recipe at the
    same token budget, and build throughput (words per minute)."""
    from memstrata.eval import bench_reader as br

    with tempfile.TemporaryDirectory() as tmp, errors():
        cfg = load_config(config)
        if tier == "llm" and cfg.llm.kind == "none":
            cfg.llm.kind = "gguf"
        path = db or str(Path(tmp) / "reader.db")
        report = run_on_memory(
            path,
            cfg,
            "reading",
            None,
            lambda m, tick: br.run(
                m,
                file,
                fmt=fmt,
                design=design,
                tier=tier,
                baseline=baseline,
                limit=limit,
                progress=tick,
            ),
        )
        paths = br.write(report, out_dir)
    emit(br.markdown(report), paths)


@bench_app.command("gguf")
def bench_gguf(
    turns: Annotated[
        int, typer.Option(min=1, help="Turns of the sample conversation (two calls each).")
    ] = 8,
    max_tokens: Annotated[int, typer.Option(min=1, help="Completion budget of a call.")] = 256,
    model: Annotated[
        Path | None, typer.Option(help="A GGUF file, loaded as it is (default: the bundled one).")
    ] = None,
    weights: Annotated[
        str, typer.Option(help="The bundled model's weights: q8_0 (converted once) or as-is.")
    ] = "q8_0",
    out_dir: Annotated[Path, typer.Option("--out", help="Where to write gguf.json/.md.")] = Path(
        "bench-out"
    ),
) -> None:
    """JSON calls through the in-process GGUF backend with llama-cpp-python's grammar
    sampler and with the lazy one (the default), alternately on the same prompts: how
    fast a long prompt is read, call and reply-token medians, whether the replies are
    identical, and how often the lazy sampler tested the whole vocabulary. Needs the gguf
    extra."""
    from memstrata.eval import bench_gguf as bg

    if weights not in ("q8_0", "as-is"):
        err.print("error: --weights takes q8_0 or as-is", markup=False)
        raise typer.Exit(2)
    kind = None if weights == "as-is" else weights
    with errors():
        report = bg.run(turns, max_tokens, str(model) if model else None, kind)
        paths = bg.write(report, out_dir)
    emit(bg.markdown(report), paths)
