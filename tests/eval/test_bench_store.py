"""``memstrata bench store`` on both stores: the same episodes land on each, the ingest
embeds nothing (the vectors were computed up front), every figure is there."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import pgtest
from memstrata.embed import MiniLMEmbedder
from memstrata.eval import bench_store
from memstrata.memory import AsyncMemory


def test_the_same_episodes_on_both_stores(
    tmp_path: Path, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    searched: Counter[str] = Counter()
    search = AsyncMemory.search

    async def counting(self: AsyncMemory, query: str, **kw: Any) -> Any:
        searched[kw["recipe"]] += 1
        return await search(self, query, **kw)

    monkeypatch.setattr(AsyncMemory, "search", counting)
    cache = tmp_path / "emb.npy"
    admin = pgtest.local_server().url("postgres")
    report = bench_store.run(
        tmp_path, embedder, n=300, n_queries=5, db=admin, cache=cache, stores=("sqlite", "postgres")
    )
    assert report["setup"]["texts_embedded_before"] == 300
    for kind in ("sqlite", "postgres"):
        row = report["stores"][kind]
        assert row["episodes"] == 300 and row["texts_embedded_during_ingest"] == 0
        assert set(row["search"]) == {"rag", "default", "bm25_only", "dense_only_query_embedded"}
        assert all(t["p95_ms"] >= t["p50_ms"] for t in row["search"].values())
    # each recipe timed over the 5 queries on each of the 2 stores
    assert searched == {"rag": 10, "default": 10}
    assert "| postgres |" in bench_store.markdown(report)
    again = bench_store.run(tmp_path, embedder, n=300, n_queries=5, cache=cache, stores=("sqlite",))
    assert again["setup"]["texts_embedded_before"] == 0  # the kept vectors were reused
