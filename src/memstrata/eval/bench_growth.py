"""``memstrata bench growth``: what one insert costs as the memory grows.

For a recipe with builders, into a fresh store (build mode ``manual``): for each size N
in turn, the namespace is filled to N episodes (``add_many`` then one build), then
``inserts`` more episodes are added one at a time, each followed by an incremental
build, and timed. Per size the report gives add and build p50/p95 (``add`` alone is the
baseline of the same run), the LLM calls and prompt tokens per insert (``llm`` tier),
and the builders' own figures after the inserts (``Builder.describe``), such as a tree's
depth, so the cost can be read against the structure's size. Build time is given as wall
time and as this process's CPU time (all its threads), which other jobs on the machine
do not inflate.

The episodes are the synthetic chat turns of ``bench scale`` unless a JSONL file of
episodes (the ``memstrata import`` format) is given.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memstrata.eval.bench_scale import synthetic_turns
from memstrata.eval.metrics import percentile
from memstrata.eval.report import write_report
from memstrata.memory import AsyncMemory

NAMESPACE = "growth"


def _p50_p95(ms: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(ms), 1), "p95": round(percentile(ms, 0.95), 1)}


def load_episodes(path: str | Path | None, needed: int, seed: int) -> list[dict[str, Any]]:
    if path is None:
        return synthetic_turns(needed, seed)
    from memstrata.importers import jsonl

    items = [item for _, item in jsonl.read(Path(path)) if isinstance(item, dict)]
    if len(items) < needed:
        raise ValueError(f"{path} holds {len(items)} episodes; the sizes need {needed}")
    return items[:needed]


async def run(
    memory: AsyncMemory,
    *,
    recipe: str,
    sizes: list[int],
    inserts: int,
    tier: str | None = None,
    data: str | Path | None = None,
    seed: int = 7,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    if not memory.engine.builders(recipe):
        raise ValueError(f"recipe {recipe!r} builds nothing; choose one with builders")
    if not sizes or sorted(sizes) != sizes or sizes[0] < 1 or inserts < 1:
        raise ValueError("sizes must be increasing and positive, inserts at least 1")
    episodes = load_episodes(data, sizes[-1] + len(sizes) * inserts, seed)
    report: dict[str, Any] = {
        "recipe": recipe,
        "data": str(data) if data else f"synthetic chat turns (seed {seed})",
        "inserts": inserts,
        "sizes": [],
    }
    have = 0
    for size in sizes:
        fill = episodes[have:size]
        if fill:
            await memory.add_many(fill, namespace=NAMESPACE, progress=progress)
            await memory.build(NAMESPACE, recipe=recipe, tier=tier)
        have = n = max(have, size)  # episodes in before the timed inserts
        add_ms: list[float] = []
        build_ms: list[float] = []
        build_cpu_ms: list[float] = []
        work: dict[str, int] = {}
        tier_used = ""
        usage_before = memory.store.llm_usage(NAMESPACE)
        for item in episodes[have : have + inserts]:
            t0 = time.perf_counter()
            await memory.add(
                item["text"], **{k: v for k, v in item.items() if k != "text"}, namespace=NAMESPACE
            )
            t1, c1 = time.perf_counter(), time.process_time()
            builds = await memory.build(NAMESPACE, recipe=recipe, tier=tier)
            t2 = time.perf_counter()
            build_cpu_ms.append(1000 * (time.process_time() - c1))
            add_ms.append(1000 * (t1 - t0))
            build_ms.append(1000 * (t2 - t1))
            tier_used = builds[0].tier if builds else tier_used
            for b in builds:
                for key, value in b.work.items():
                    work[key] = work.get(key, 0) + value
        have += inserts
        calls, prompt_tokens = _usage_since(usage_before, memory.store.llm_usage(NAMESPACE))
        ctx = memory.engine.context(NAMESPACE, tier_used or "heuristic")
        details = {b.name: await b.describe(ctx, NAMESPACE) for b in memory.engine.builders(recipe)}
        problems = [
            f"{b.name}: {p}"
            for b in memory.engine.builders(recipe)
            for p in await b.check(ctx, NAMESPACE)
        ]
        report["sizes"].append(
            {
                "n": n,
                "tier": tier_used,
                "add_ms": _p50_p95(add_ms),
                "build_ms": _p50_p95(build_ms),
                "build_cpu_ms": _p50_p95(build_cpu_ms),
                "llm_calls_per_insert": round(calls / inserts, 2),
                "prompt_tokens_per_insert": round(prompt_tokens / inserts, 1),
                "work_per_insert": {k: round(v / inserts, 2) for k, v in sorted(work.items())},
                "builders": details,
                "problems": problems,
            }
        )
    return report


def _usage_since(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
) -> tuple[int, int]:
    """LLM calls and prompt tokens recorded between two readings of the accounting."""
    calls = tokens = 0
    for stage, u in after.items():
        b = before.get(stage, {})
        calls += int(u.get("calls", 0)) - int(b.get("calls", 0))
        tokens += int(u.get("prompt_tokens", 0)) - int(b.get("prompt_tokens", 0))
    return calls, tokens


def _short(details: dict[str, Any]) -> str:
    keep = []
    for name, figures in details.items():
        flat = {k: v for k, v in figures.items() if not isinstance(v, dict)}
        keep.append(f"{name}: " + ", ".join(f"{k} {v}" for k, v in flat.items()))
    return "; ".join(keep)


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Insert cost against memory size: `{report['recipe']}` ({report['data']}, "
        f"{report['inserts']} timed inserts per size)",
        "",
        "| N | tier | add p50 ms | build p50 ms | build p95 ms | build CPU p50 ms | "
        "LLM calls/insert | prompt tok/insert | builder work/insert | invariants |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for s in report["sizes"]:
        lines.append(
            f"| {s['n']} | {s['tier']} | {s['add_ms']['p50']} | {s['build_ms']['p50']} | "
            f"{s['build_ms']['p95']} | {s['build_cpu_ms']['p50']} | {s['llm_calls_per_insert']} | "
            f"{s['prompt_tokens_per_insert']} | "
            + ", ".join(f"{k} {v}" for k, v in s["work_per_insert"].items())
            + f" | {'hold' if not s['problems'] else 'BROKEN'} |"
        )
    lines.append("")
    for s in report["sizes"]:
        lines.append(f"- N = {s['n']}: {_short(s['builders'])}")
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, f"growth-{report['recipe']}", markdown)
