"""``memstrata bench qa`` and ``memstrata bench convert``: the evaluation harness."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from memstrata.cli.common import ConfigOpt, bench_app, err, errors, load_config, out, progress_bar
from memstrata.engine.engine import check_tier
from memstrata.memory import AsyncMemory
from memstrata.store import store_target
from memstrata.wording import plural

DEFAULT_CACHE = Path("~/.cache/memstrata/bench")


@bench_app.command("qa")
def bench_qa(
    file: Annotated[Path, typer.Argument(help="The data file.", exists=True, dir_okay=False)],
    fmt: Annotated[str, typer.Option("--format", help="locomo, longmemeval or qaset.")] = "qaset",
    recipes: Annotated[
        str, typer.Option(help="Recipes, comma-separated, or 'all' (every registered one).")
    ] = "all",
    out_dir: Annotated[
        Path, typer.Option("--out", help="The run directory (must not hold another run).")
    ] = Path("bench-out/qa"),
    judge: Annotated[
        str,
        typer.Option(
            help="Judge prompts: locomo, personalai, mindgraph, memtree (comma-separated) or none."
        ),
    ] = "locomo",
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.")] = None,
    sample: Annotated[int | None, typer.Option(help="N questions drawn at random.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of --sample.")] = 0,
    resume: Annotated[bool, typer.Option(help="Continue the interrupted run in --out.")] = False,
    answers: Annotated[bool, typer.Option(help="Answer (and judge) each question.")] = True,
    build_tier: Annotated[
        str | None,
        typer.Option(help="Tier of the builds: heuristic or llm (default: llm with an LLM)."),
    ] = None,
    search_tier: Annotated[
        str | None,
        typer.Option(
            help="Tier of the searches: heuristic keeps the LLM to answers and judges "
            "(default: retrieval.tier, else llm with an LLM)."
        ),
    ] = None,
    cache_dir: Annotated[
        Path, typer.Option(help="Where stores, LLM responses and result rows are kept.")
    ] = DEFAULT_CACHE,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Fresh temporary store, no result cache.")
    ] = False,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Run in this store instead of a cached SQLite file: a path, or a "
            "postgresql:// URL (`memstrata pg start` makes a local server). Its namespaces "
            "are the samples' ids; data already there with other content is a conflict.",
            show_default=False,
        ),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Every recipe side by side on one QA set: retrieval (R@K, P@K, evidence set,
    LongMemEval recall and NDCG), answers (LoCoMo F1, BLEU-1, EM, judges, abstention),
    cost per stage and latency. Writes DIR/summary.json, questions.jsonl, report.md and
    report.html; a rerun is served from the caches."""
    with errors():  # the report's plots are an extra: a missing one is one line
        from memstrata.eval.qa import bench as qb
    from memstrata.eval.qa.formats import FORMATS, file_hash
    from memstrata.eval.qa.judge import parse_judges
    from memstrata.eval.qa.run import Options
    from memstrata.eval.qa.rundir import ResultCache

    if fmt not in FORMATS:
        err.print(f"error: unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
        raise typer.Exit(2)
    with tempfile.TemporaryDirectory() as tmp, errors():
        cfg = load_config(config)
        if search_tier is not None:
            retrieval = cfg.retrieval.model_copy(update={"tier": check_tier(search_tier)})
            cfg = cfg.model_copy(update={"retrieval": retrieval})
        judges = parse_judges(judge)
        cache_root = Path(tmp) if no_cache else cache_dir.expanduser()
        store: str | Path = cache_root / "stores" / f"{qb.store_key(cfg, fmt, file_hash(file))}.db"
        if db is not None:
            store = store_target(db)
        else:
            Path(store).parent.mkdir(parents=True, exist_ok=True)
        cache = None if no_cache else ResultCache(cache_root / "results.sqlite")

        async def run() -> dict[str, Any]:
            memory = await AsyncMemory.open(store, config=cfg)
            judge_llm = qb.judge_client(cfg, memory.store) if judges and answers else None
            try:
                names = qb.resolve_recipes(memory, recipes)
                if build_tier is not None:
                    memory.engine.tier(build_tier)  # an unknown tier fails before the import
                options = Options(
                    names,
                    judges,
                    limit=limit,
                    sample=sample,
                    seed=seed,
                    answers=answers,
                    build_tier=build_tier,
                )
                with progress_bar() as progress:
                    task = progress.add_task("questions", total=None)
                    return await qb.bench(
                        memory,
                        file,
                        fmt,
                        options,
                        out_dir,
                        resume=resume,
                        cache=cache,
                        judge_llm=judge_llm,
                        progress=lambda n: progress.advance(task, n),
                        on_total=lambda n: progress.update(task, total=n),
                    )
            finally:
                await memory.close()
                if cache is not None:
                    cache.close()

        try:
            report = asyncio.run(run())
        except KeyboardInterrupt:
            err.print(f"interrupted: rows done so far are in {out_dir}; add --resume to go on")
            raise typer.Exit(130) from None
    from memstrata.eval.qa.report import markdown

    sys.stdout.write(markdown(report))
    out.print(f"written {out_dir}/summary.json, report.md and report.html", markup=False)


@bench_app.command("convert")
def bench_convert(
    file: Annotated[Path, typer.Argument(help="The data file.", exists=True, dir_okay=False)],
    source: Annotated[
        str, typer.Option("--from", help="locomo, longmemeval or hotpotqa.")
    ] = "locomo",
    corpus: Annotated[
        Path | None,
        typer.Option(help="hotpotqa: the corpus file {title: [sentences]}.", dir_okay=False),
    ] = None,
    out_file: Annotated[Path, typer.Option("--out", help="The QA-set JSON to write.")] = Path(
        "qaset.json"
    ),
) -> None:
    """Convert a data set to the generic QA-set JSON that `bench qa --format qaset` reads."""
    from memstrata.eval.qa import convert

    with errors():
        samples = convert.convert(file, source, corpus)
        path = convert.write(samples, out_file)
    n_turns = sum(len(s.turns) for s in samples)
    n_qa = sum(len(s.qa) for s in samples)
    out.print(
        f"written {path}: {plural(len(samples), 'sample')}, {plural(n_turns, 'turn')}, "
        f"{plural(n_qa, 'question')}"
    )
