"""``memstrata bench scale``: ingest throughput, search latency and bytes per episode.

The data are synthetic chat turns made from templates and word lists with a fixed seed:
about 15-30 words each, several hundred distinct content words spread over many speakers
and sessions, so BM25 posting lists and the vector matrix look like a real conversation
store at that size. Timings:

* ingest: ``add_many`` end to end (validation, embedding with the default embedder, SQLite
  writes), in batches of 512;
* search: each query timed alone (model loaded, index warm), and batches of 32 queries
  timed as a whole (per-query cost = batch time / 32); p50 and p95 over the queries;
* baselines in the same run: flat BM25 alone (one FTS5 query) and dense alone (one matrix
  product), timed the same way.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstrata.eval.metrics import percentile
from memstrata.eval.report import write_report
from memstrata.memory import AsyncMemory
from memstrata.retrieval.text import content_terms

NAMES = """
Ana Ben Chloe Dev Elif Farid Grace Hiro Ines Jonas Kemi Luca Maya Nadia Omar Priya Quinn
Rosa Sami Tomas Uma Viktor Wen Ximena Yusuf Zoe
""".split()
VERBS = """
visited cooked painted repaired booked cancelled finished started planned adopted bought
sold borrowed lost found organised joined left hosted practised learned taught wrote
read watched recorded photographed cleaned built designed ordered delivered
""".split()
OBJECTS = """
bicycle garden kitchen guitar novel podcast marathon conference workshop recipe
apartment puppy kitten laptop camera telescope sculpture mural festival concert
exhibition startup budget invoice contract roadmap dashboard pipeline database server
migration wedding birthday picnic barbecue hike trip flight ticket museum library
lecture thesis exam interview promotion holiday vineyard orchard boat piano violin drum
choir theatre football tennis chess poem letter diary quilt pottery candle bakery cafe
market
""".split()
PLACES = """
Lisbon Porto Berlin Kyoto Lagos Lima Oslo Prague Seattle Toronto Nairobi Hanoi Dublin
Boston Denver Madrid Vienna Sydney Cairo Quito the park the office the lake the
mountains the coast the village downtown the suburbs
""".split()
ADJS = """
wonderful stressful exciting quiet chaotic relaxing expensive cheap huge tiny surprising
boring colourful rainy sunny cold warm noisy peaceful busy
""".split()
# Single words, like PLACES: the data the published figures were measured on.
TIMES = """
yesterday last week this morning on Sunday last month two days ago over the weekend last
night in spring in autumn
""".split()
TEMPLATES = (
    "I {verb} the {obj} in {place} {time}, it was {adj} and {name} came along.",
    "{name} and I {verb} a {obj} {time}; honestly it felt {adj}.",
    "Did you hear that {name} {verb} the {obj}? I think it was {adj} for everyone in {place}.",
    "We finally {verb} our {obj} {time}. Next we want a {adj} {obj2} near {place}.",
    "My {obj} is {adj} lately, so {time} I {verb} a {obj2} with {name}.",
    "Thinking about the {obj} in {place} makes me smile, {name} {verb} it {time}.",
)


def _clause(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(
        verb=rng.choice(VERBS),
        obj=rng.choice(OBJECTS),
        obj2=rng.choice(OBJECTS),
        place=rng.choice(PLACES),
        time=rng.choice(TIMES),
        adj=rng.choice(ADJS),
        name=rng.choice(NAMES),
    )


def synthetic_turns(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    start = datetime(2023, 1, 1, tzinfo=UTC)
    turns = []
    for i in range(n):
        text = _clause(rng)
        if rng.random() < 0.5:
            text += " " + _clause(rng)
        turns.append(
            {
                "id": f"e{i}",
                "text": text,
                "speaker": NAMES[i % 7],
                "session": f"s{i // 20}",
                "occurred_at": start + timedelta(minutes=7 * i),
            }
        )
    return turns


def synthetic_queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    forms = (
        "When did {name} visit {place}?",
        "What happened with the {obj}?",
        "Who {verb} the {obj} in {place}?",
        "What did {name} say about the {adj} {obj}?",
    )
    return [
        rng.choice(forms).format(
            name=rng.choice(NAMES),
            place=rng.choice(PLACES),
            obj=rng.choice(OBJECTS),
            verb=rng.choice(VERBS),
            adj=rng.choice(ADJS),
        )
        for _ in range(n)
    ]


def _summary(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 0.95), 2)}


async def _run(
    path: str, n: int, n_queries: int, seed: int, progress: Callable[[int], None] | None
) -> dict[str, Any]:
    memory = await AsyncMemory.open(path)
    ns = "scale"
    try:
        turns = synthetic_turns(n, seed)
        t0 = time.perf_counter()
        await memory.add_many(turns, namespace=ns, batch_size=512, progress=progress)
        ingest_s = time.perf_counter() - t0
        size = memory.store.size_bytes()
        queries = synthetic_queries(n_queries)
        await memory.search_many(queries[:8], namespace=ns, k=10)  # warm the index

        timings: dict[str, dict[str, float]] = {}
        for recipe in ("rag", "default"):
            single = []
            for q in queries:
                t = time.perf_counter()
                await memory.search(q, namespace=ns, k=10, recipe=recipe, max_tokens=None)
                single.append(1000 * (time.perf_counter() - t))
            batched = []
            for start in range(0, len(queries), 32):
                group = queries[start : start + 32]
                t = time.perf_counter()
                await memory.search_many(group, namespace=ns, k=10, recipe=recipe, max_tokens=None)
                per = 1000 * (time.perf_counter() - t) / len(group)
                batched.extend([per] * len(group))
            timings[recipe] = {
                **{f"single_{k}": v for k, v in _summary(single).items()},
                **{f"batch_{k}": v for k, v in _summary(batched).items()},
            }

        store = memory.store
        bm25_ms, dense_ms = [], []
        qvecs = memory.embedder.embed(queries)
        for q, vec in zip(queries, qvecs, strict=True):
            t = time.perf_counter()
            store.bm25_episodes(ns, content_terms(q), 10)
            bm25_ms.append(1000 * (time.perf_counter() - t))
            t = time.perf_counter()
            store.dense_episodes(ns, memory.embedder.model_id, vec[None, :], 10)
            dense_ms.append(1000 * (time.perf_counter() - t))
        t = time.perf_counter()
        memory.embedder.embed(queries)
        embed_ms = 1000 * (time.perf_counter() - t) / len(queries)
        timings["flat_bm25_only"] = _summary(bm25_ms)
        timings["flat_dense_only_without_query_embedding"] = _summary(dense_ms)
        return {
            "episodes": n,
            "queries": n_queries,
            "ingest_seconds": round(ingest_s, 1),
            "ingest_episodes_per_s": round(n / ingest_s, 1),
            "bytes": size,
            "bytes_per_episode": round(size / n, 1),
            "query_embedding_ms_batched": round(embed_ms, 2),
            "search": timings,
        }
    finally:
        await memory.close()


def run(
    path: str,
    *,
    n: int,
    n_queries: int = 200,
    seed: int = 7,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    return asyncio.run(_run(path, n, n_queries, seed, progress))


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Scale benchmark: {report['episodes']:,} synthetic episodes in one namespace",
        "",
        f"- ingest: {report['ingest_episodes_per_s']} episodes/s "
        f"({report['ingest_seconds']} s, default embedder included)",
        f"- disk: {report['bytes_per_episode']} bytes/episode ({report['bytes'] / 1e6:.1f} MB)",
        f"- query embedding (batched): {report['query_embedding_ms_batched']} ms/query",
        "",
        "| search | p50 ms | p95 ms | batch p50 ms/query | batch p95 ms/query |",
        "|---|---|---|---|---|",
    ]
    for name, t in report["search"].items():
        if "single_p50_ms" in t:
            lines.append(
                f"| {name} | {t['single_p50_ms']} | {t['single_p95_ms']} | {t['batch_p50_ms']} "
                f"| {t['batch_p95_ms']} |"
            )
        else:
            lines.append(f"| {name} | {t['p50_ms']} | {t['p95_ms']} | - | - |")
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, "scale", markdown)
