"""The vector graph's search list against recall and latency, on a store `bench scale`
kept::

    memstrata bench scale --sizes ... --data ... --db /tmp/scale/scale.db
    python -m studies.ann_search_list /tmp/scale/scale.db --data locomo:FILE \\
        --data qaset:FILE [--lists 256,512,1024] [--queries 200]

For each search list, on the same graph in the same run: the top-10 agreement of dense
and of `default` search as served with the exact path (every vector scanned, FTS5 with
every term), and the p50/p95 of dense and of `default` search (query embedding left
out, as in `bench scale`). Each list is timed twice, in order and then in reverse, and
the second pass is reported, so no list gains from a warmer cache. Figures:
docs/scale.md, "The search list at 1,000,000".
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import numpy as np

from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.eval.bench_scale import (
    MANUAL,
    NS,
    _exact_stores,
    _summary,
    pick_queries,
    real_turns,
)
from memstrata.eval.precomputed import Precomputed
from memstrata.facade import AsyncMemory
from memstrata.store import SQLiteStore


async def _top10(memory: AsyncMemory, query: str) -> set[str]:
    hits = (await memory.search(query, namespace=NS, k=10, max_tokens=None)).hits
    return {h.id for h in hits}


def _pair(ms: list[float]) -> str:
    t = _summary(ms)
    return f"{t['p50_ms']:.2f} / {t['p95_ms']:.2f}"


async def _run(db: str, data: list[tuple[str, str]], lists: list[int], n: int, seed: int) -> None:
    inner = MiniLMEmbedder()
    embedder = Precomputed(inner)
    queries = pick_queries(real_turns(data, 1)[1], n, seed)
    embedder.warm(queries)
    vecs = np.stack([embedder.known[q] for q in queries])
    model = embedder.model_id
    with _exact_stores():
        exact = await AsyncMemory.open(db, embedder=embedder, **MANUAL)
    try:
        want = [
            {k for k, _ in exact.store.dense_episodes(NS, model, v[None, :], 10)[0]} for v in vecs
        ]
        want_default = [await _top10(exact, q) for q in queries]
    finally:
        await exact.close()
    memory = await AsyncMemory.open(db, embedder=embedder, **MANUAL)
    store = memory.store
    assert isinstance(store, SQLiteStore)
    store.dense_episodes(NS, model, vecs[:1], 10)
    graph = next(i.ann for i in store._indexes.values() if i.ann is not None)
    print(f"{len(graph):,} vectors in the graph, {len(queries)} questions")
    rows: dict[int, dict[str, Any]] = {}
    try:
        for ef in lists + lists[::-1]:
            graph._index.expansion_search = ef  # type: ignore[attr-defined]
            dense, found = [], []
            for v, w in zip(vecs, want, strict=True):
                t = time.perf_counter()
                got = store.dense_episodes(NS, model, v[None, :], 10)[0]
                dense.append(1000 * (time.perf_counter() - t))
                found.append(len({k for k, _ in got} & w) / 10)
            default, agree = [], []
            for q, ids in zip(queries, want_default, strict=True):
                t = time.perf_counter()
                got_ids = await _top10(memory, q)
                default.append(1000 * (time.perf_counter() - t))
                agree.append(len(got_ids & ids) / max(1, len(ids)))
            rows[ef] = {
                "recall": statistics.mean(found),
                "default_recall": statistics.mean(agree),
                "dense": dense,
                "default": default,
            }
    finally:
        await memory.close()
    print(
        "| search list | top-10 vs exact: dense / default | dense p50 / p95 ms "
        "| default p50 / p95 ms |"
    )
    print("|---|---|---|---|")
    for ef in lists:
        r = rows[ef]
        both = f"{r['recall']:.4f} / {r['default_recall']:.4f}"
        print(f"| {ef} | {both} | {_pair(r['dense'])} | {_pair(r['default'])} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--data", action="append", required=True, help="FORMAT:PATH")
    ap.add_argument("--lists", default="256,512,1024")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7, help="as bench scale's: the same questions")
    args = ap.parse_args()
    data = [(p, f) for f, p in (d.split(":", 1) for d in args.data)]
    lists = [int(x) for x in args.lists.split(",")]
    asyncio.run(_run(args.db, data, lists, args.queries, args.seed))


if __name__ == "__main__":
    main()
