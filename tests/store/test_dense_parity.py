"""Dense search gives the same order and scores on both backends: the PostgreSQL store
scores its index's candidates as the SQLite store scores everything (the float32 query's
inner product with the stored float16 vector)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from test_conformance import _WORDS, add_embedded, keys_of, prep

import pgtest
from memstrata.store import SearchFilters, open_store


def test_dense_ranks_alike_on_both_backends(tmp_path: Path, embedder) -> None:
    rng = random.Random(11)
    eps = [
        prep(
            f"d{i}",
            " ".join(rng.choice(_WORDS) for _ in range(rng.choice([3, 6, 12]))),
            speaker=rng.choice(["ana", "ben"]),
            session=rng.choice(["s1", "s2"]),
            embed=True,
        )
        for i in range(400)
    ]
    lite = open_store(tmp_path / "s.db")
    pg = open_store(pgtest.database_url(tmp_path))
    try:
        for store in (lite, pg):
            add_embedded(store, embedder, "ns", eps)
        ids = [e.external_id for e in eps]
        names = [{v: k for k, v in keys_of(s, "ns", ids).items()} for s in (lite, pg)]
        queries = embedder.embed([" ".join(rng.sample(_WORDS, 3)) for _ in range(40)])
        compared = 0
        for flt in (None, SearchFilters(speakers=["ana"])):
            for limit in (10, 50):
                got = [
                    [
                        [(name[k], s) for k, s in hits]
                        for hits in store.dense_episodes(
                            "ns", embedder.model_id, queries, limit, flt
                        )
                    ]
                    for store, name in zip((lite, pg), names, strict=True)
                ]
                for want, have in zip(*got, strict=True):
                    assert [i for i, _ in want] == [i for i, _ in have]
                    for (_, ws), (_, hs) in zip(want, have, strict=True):
                        assert hs == pytest.approx(ws, abs=1e-6)
                    compared += len(want)
        assert compared == 40 * 2 * 60
    finally:
        lite.close()
        pg.close()
        pgtest.drop(tmp_path)
