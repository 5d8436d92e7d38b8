"""``memstrata bench routes``: latency of each route of a recipe, on a built structure.

The data are :mod:`memstrata.eval.bench_scale`'s synthetic chat turns (fixed seed). Each
recipe's builders fold them in (heuristic tier); then every route of the recipe is timed
on its own, one query at a time (its structures loaded and warm, the query embedded by
the route as in a search), so a route's figure is its own work: for a graph route,
parsing the query, matching it to nodes, the traversal and its filter. The report also
gives what the builders say they built (``describe``: node counts and the like) and the
whole search's latency (all routes and the fusion).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memstrata.eval.bench_scale import synthetic_queries, synthetic_turns
from memstrata.eval.metrics import percentile
from memstrata.eval.report import write_report
from memstrata.memory import AsyncMemory

NAMESPACE = "routes"


def _summary(ms: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(ms, 0.5), 2), "p95": round(percentile(ms, 0.95), 2)}


async def run(
    memory: AsyncMemory,
    recipes: list[str],
    episodes: int,
    n_queries: int,
    seed: int = 7,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    turns = synthetic_turns(episodes, seed)
    await memory.add_many(turns, namespace=NAMESPACE, batch_size=512, progress=progress)
    queries = synthetic_queries(n_queries)
    report: dict[str, Any] = {"episodes": episodes, "queries": n_queries, "recipes": {}}
    engine = memory.engine
    for recipe in recipes:
        t0 = time.perf_counter()
        built = await memory.build(NAMESPACE, recipe=recipe) if engine.builders(recipe) else []
        entry: dict[str, Any] = {
            "build_seconds": round(time.perf_counter() - t0, 2),
            "structures": {b.builder: b.details for b in built},
            "routes": {},
        }
        ctx = engine.context(NAMESPACE)
        spec = engine.recipe(recipe)
        for rs, route in zip(spec.routes, engine.routes(recipe), strict=True):
            await route.search(ctx, NAMESPACE, queries[:1], 10)  # load and warm
            ms, cpu = [], []
            for q in queries:
                t1, c1 = time.perf_counter(), time.process_time()
                await route.search(ctx, NAMESPACE, [q], 10)
                ms.append(1000 * (time.perf_counter() - t1))
                cpu.append(1000 * (time.process_time() - c1))
            entry["routes"][rs.name] = {**_summary(ms), "cpu_p50": _summary(cpu)["p50"]}
        ms = []
        for q in queries:
            t1 = time.perf_counter()
            await memory.search(q, namespace=NAMESPACE, k=10, recipe=recipe, max_tokens=None)
            ms.append(1000 * (time.perf_counter() - t1))
        entry["search"] = _summary(ms)
        report["recipes"][recipe] = entry
    return report


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Route latency — {report['episodes']} synthetic episodes, {report['queries']} "
        "queries, one at a time (ms).",
        "",
        "| recipe | route | p50 | p95 | CPU p50 | whole search p50 | built |",
        "|---|---|---|---|---|---|---|",
    ]
    for recipe, e in report["recipes"].items():
        built = "; ".join(
            f"{b}: " + ", ".join(f"{k} {v}" for k, v in d.items() if isinstance(v, int | float))
            for b, d in e["structures"].items()
        )
        for route, s in e["routes"].items():
            lines.append(
                f"| {recipe} | {route} | {s['p50']} | {s['p95']} | {s['cpu_p50']} | "
                f"{e['search']['p50']} | {built} |"
            )
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, "routes", markdown)
