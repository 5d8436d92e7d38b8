"""``memstrata bench store``: the same data ingested and searched on SQLite and on
PostgreSQL in one run, so the two stores' figures sit side by side.

The episodes are the synthetic turns of ``bench scale`` (or a JSONL file of import lines).
Their embeddings are computed once, before any store is timed, and served from memory
to every store (the embedder's cost is the same whatever the store, and alone it would
take most of the time: ``bench scale`` measures it). So the ingest rate is the store's:
validation, the embedding cache, episodes, the full-text index, in batches of 512.
Queries are embedded for real at search time, on every store alike.

Search is timed one query at a time (p50/p95 over the queries): ``rag`` (System-1's flat
hybrid: dense + BM25, fused), ``default`` (System-1 with its routes), and the store's two
primitives alone (BM25; dense with the query already embedded).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from memstrata.embed.base import Embedder
from memstrata.eval.bench_scale import _summary, synthetic_queries, synthetic_turns
from memstrata.eval.precomputed import Precomputed
from memstrata.eval.report import write_report
from memstrata.memory import AsyncMemory
from memstrata.retrieval.documents import embed_text
from memstrata.retrieval.text import content_terms

NS = "store-bench"
BATCH = 512


def load_turns(data: Path | None, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` import lines: the first ``n`` of ``data``, or synthetic turns."""
    if data is None:
        return synthetic_turns(n, seed)
    out = []
    with data.open() as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
                if len(out) == n:
                    break
    return out


async def measure(
    location: str,
    embedder: Precomputed,
    turns: list[dict[str, Any]],
    queries: list[str],
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Ingest ``turns`` into the store at ``location``, then time the searches."""
    misses = embedder.misses
    manual: dict[str, Any] = {"build.mode": "manual"}
    async with AsyncMemory.open(location, embedder=embedder, **manual) as m:
        t0 = time.perf_counter()
        report = await m.add_many(turns, namespace=NS, batch_size=BATCH, progress=progress)
        ingest_s = time.perf_counter() - t0
        ingest_misses = embedder.misses - misses
        await m.search_many(queries[:8], namespace=NS, k=10)  # warm caches and indexes
        timings: dict[str, dict[str, float]] = {}
        for recipe in ("rag", "default"):
            ms = []
            for q in queries:
                t = time.perf_counter()
                await m.search(q, namespace=NS, k=10, recipe=recipe, max_tokens=None)
                ms.append(1000 * (time.perf_counter() - t))
            timings[recipe] = _summary(ms)
        bm25_ms, dense_ms = [], []
        vecs = embedder.inner.embed(queries)
        for q, vec in zip(queries, vecs, strict=True):
            t = time.perf_counter()
            m.store.bm25_episodes(NS, content_terms(q), 10)
            bm25_ms.append(1000 * (time.perf_counter() - t))
            t = time.perf_counter()
            m.store.dense_episodes(NS, embedder.model_id, vec[None, :], 10)
            dense_ms.append(1000 * (time.perf_counter() - t))
        timings["bm25_only"] = _summary(bm25_ms)
        timings["dense_only_query_embedded"] = _summary(dense_ms)
        size = m.store.size_bytes()
    return {
        "episodes": len(report.added),
        "ingest_seconds": round(ingest_s, 1),
        "ingest_episodes_per_s": round(len(turns) / ingest_s, 1),
        "texts_embedded_during_ingest": ingest_misses,
        "bytes": size,
        "search": timings,
    }


@contextmanager
def store_location(kind: str, workdir: Path, db: str | None) -> Iterator[str]:
    """A fresh, empty store of ``kind``: a SQLite file in ``workdir``, or a database on
    the PostgreSQL server of ``db`` (else on a local one started for the run)."""
    if kind == "sqlite":
        path = workdir / "store-bench.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        yield str(path)
        return
    if kind != "postgres":
        raise ValueError(f"unknown store {kind!r}: sqlite or postgres")
    from memstrata.eval.sites import PostgresSite, local_postgres

    with ExitStack() as stack:
        admin = db or stack.enter_context(local_postgres(workdir / "pg"))
        site = PostgresSite(admin, prefix="memstrata")
        stack.callback(site.close)
        yield site.new("store_bench")


def run(
    workdir: Path,
    embedder: Embedder,
    *,
    n: int,
    stores: Sequence[str] = ("sqlite", "postgres"),
    n_queries: int = 200,
    seed: int = 7,
    data: Path | None = None,
    db: str | None = None,
    cache: Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Embed once, then ingest and search on each store in turn; ``progress(stage,
    done, total)`` follows the embedding and each ingest."""
    workdir.mkdir(parents=True, exist_ok=True)
    turns = load_turns(data, n, seed)
    queries = synthetic_queries(n_queries)
    pre = Precomputed(embedder)
    if cache is not None:
        pre.load(cache)
    texts = [embed_text(t["text"], t.get("speaker"), t.get("metadata") or {}) for t in turns]
    done = [0]

    def step(stage: str, total: int) -> Callable[[int], None]:
        done[0] = 0

        def advance(k: int) -> None:
            done[0] += k
            if progress is not None:
                progress(stage, done[0], total)

        return advance

    t0 = time.perf_counter()
    before = len(pre.known)
    pre.warm(texts, step("embedding", len(texts)), keep=cache)
    embed_s = time.perf_counter() - t0
    report: dict[str, Any] = {
        "setup": {
            "episodes": len(turns),
            "data": str(data) if data else f"synthetic turns (seed {seed})",
            "queries": n_queries,
            "batch": BATCH,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "embedder": embedder.model_id,
            "texts_embedded_before": len(pre.known) - before,
            "embedding_seconds": round(embed_s, 1),
        },
        "stores": {},
    }
    for kind in stores:
        with store_location(kind, workdir, db) as location:
            report["stores"][kind] = asyncio.run(
                measure(location, pre, turns, queries, step(f"ingest {kind}", len(turns)))
            )
    return report


def markdown(report: dict[str, Any]) -> str:
    setup = report["setup"]
    lines = [
        f"# Stores side by side: {setup['episodes']:,} episodes in one namespace",
        "",
        f"Data: {setup['data']}; {setup['queries']} queries; {setup['cpus']} CPUs. "
        "Embeddings computed before the timed ingest (batches of "
        f"{setup['batch']}); queries embedded at search time.",
        "",
        "| store | ingest episodes/s | ingest s | rag p50 / p95 ms | default p50 / p95 ms "
        "| BM25 alone p50 / p95 ms | dense alone p50 / p95 ms | bytes/episode |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, r in report["stores"].items():
        s = r["search"]
        cells = [
            kind,
            r["ingest_episodes_per_s"],
            r["ingest_seconds"],
            *(
                f"{s[k]['p50_ms']} / {s[k]['p95_ms']}"
                for k in ("rag", "default", "bm25_only", "dense_only_query_embedded")
            ),
            round(r["bytes"] / max(r["episodes"], 1)),
        ]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, "store", markdown)
