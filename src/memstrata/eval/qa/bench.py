"""``memstrata bench qa``: the whole run, from a data file to a run directory."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memstrata.config import Config
from memstrata.errors import InvalidInputError
from memstrata.eval.qa import formats, report, report_html, summary
from memstrata.eval.qa.run import Options, Progress, Runner, select, total_questions
from memstrata.eval.qa.rundir import (
    COSTS,
    ROWS,
    ResultCache,
    RunDir,
    code_version,
    digest,
    versions,
)
from memstrata.factory import make_llm
from memstrata.llm.base import LLMClient
from memstrata.memory import AsyncMemory
from memstrata.store import Store


def resolve_recipes(memory: AsyncMemory, text: str) -> list[str]:
    """``all`` → every registered recipe (built-in, plug-in and configured), in registry
    order; otherwise the named ones, each checked."""
    known = list(memory.engine.registry.recipes)
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return known
    if not names:
        raise InvalidInputError("--recipes names no recipe")
    for n in names:
        memory.engine.recipe(n)  # raises with the list of recipes
    return list(dict.fromkeys(names))


def store_key(config: Config, fmt: str, data_hash: str) -> str:
    """Names the cached store: the data and what decides the stored structures (the
    configuration, and the memstrata version whose builders made them)."""
    parts = {
        "version": code_version(),
        "embedder": config.embedder.model_dump(mode="json", exclude={"api_key"}),
        # an unset chaos section stays out, so keys made before it existed still match
        "llm": config.llm.model_dump(
            mode="json",
            exclude={"api_key", "cache_dir"} | ({"chaos"} if config.llm.chaos is None else set()),
        ),
        "recipes": {k: v.model_dump(mode="json") for k, v in config.recipes.items()},
    }
    return f"{fmt}-{data_hash[:12]}-{digest(parts)[:10]}"


def judge_client(config: Config, store: Store) -> LLMClient | None:
    """The judge: ``[eval.judge]`` if set, else the configured LLM; None without one."""
    chosen = config.eval.judge or config.llm
    if chosen.kind == "none":
        return None
    return make_llm(config.model_copy(update={"llm": chosen}), store)


async def bench(
    memory: AsyncMemory,
    data: str | Path,
    fmt: str,
    options: Options,
    out_dir: str | Path,
    *,
    resume: bool = False,
    cache: ResultCache | None = None,
    judge_llm: LLMClient | None = None,
    progress: Progress | None = None,
    on_total: Progress | None = None,
) -> dict[str, Any]:
    started = time.perf_counter()
    samples = select(formats.load(data, fmt), options.limit, options.sample, options.seed)
    data_hash = formats.file_hash(data)
    cfg = memory.config
    args = {
        "data": str(data),
        "format": fmt,
        "recipes": options.recipes,
        "judges": options.judges if judge_llm is not None else [],
        "limit": options.limit,
        "sample": options.sample,
        "seed": options.seed,
        "answers": options.answers,
    }
    info = {
        "args": args,
        "data_sha256": data_hash,
        "config": cfg.masked(),
        "recipes": {n: memory.engine.recipe(n).model_dump(mode="json") for n in options.recipes},
        "versions": versions(),
        "embedder": memory.embedder.model_id,
        "llm": memory.llm.backend.model if memory.llm is not None else None,
        "judge": judge_llm.backend.model if judge_llm is not None else None,
        "started": datetime.now(UTC).isoformat(),
    }
    info["fingerprint"] = digest([args, data_hash, info["config"], info["recipes"]])
    run_dir = RunDir(out_dir)
    done = run_dir.start(info, resume=resume)
    if on_total is not None:
        on_total(total_questions(samples, options.recipes))
    runner = Runner(
        memory,
        Options(**{**options.__dict__, "judges": args["judges"]}),
        run_dir,
        cache=cache,
        judge_llm=judge_llm,
        progress=progress,
    )
    await runner.run(samples, done)
    rows, costs = run_dir.read(ROWS), run_dir.read(COSTS)
    per_recipe = summary.summarise(rows, costs, options.recipes)
    result: dict[str, Any] = {
        "data": str(data),
        "format": fmt,
        "data_sha256": data_hash,
        "samples": len(samples),
        "questions": sum(len(s.qa) for s in samples),
        "wall_seconds": round(time.perf_counter() - started, 2),
        "served_from_cache": sum(e["served_from_cache"] for e in per_recipe.values()),
        "currency": cfg.eval.currency,
        "recipes": per_recipe,
    }
    result["needs_llm"] = summary.needs_llm(
        llm=memory.llm is not None,
        judge=judge_llm is not None or not options.judges,
        answers=options.answers,
    )
    run_dir.write("summary.json", json.dumps(result, indent=2))
    run_dir.write("report.md", report.markdown(result))
    run_dir.write("report.html", report_html.render(result))
    return result
