"""``memstrata bench store`` on both stores: the same episodes land on each, the ingest
embeds nothing (the vectors were computed up front), every figure is there."""

from __future__ import annotations

from pathlib import Path

import pgtest
from memstrata.embed import MiniLMEmbedder
from memstrata.eval import bench_store


def test_the_same_episodes_on_both_stores(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
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
        assert all(t["p95_ms"] >= t["p50_ms"] > 0 for t in row["search"].values())
    assert "| postgres |" in bench_store.markdown(report)
    again = bench_store.run(tmp_path, embedder, n=300, n_queries=5, cache=cache, stores=("sqlite",))
    assert again["setup"]["texts_embedded_before"] == 0  # the kept vectors were reused
