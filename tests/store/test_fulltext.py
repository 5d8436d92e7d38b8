"""The SQLite store's full-text index of large namespaces (store/fulltext.py): it finds
what FTS5 finds, ranks it alike, never returns a deleted episode or an old text, is taken
from its folder when the store is reopened, and a folder that is unusable or belongs to
another store is rebuilt while FTS5 answers."""

from __future__ import annotations

import json
import logging
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_conformance import keys_of, prep, replace_bytes

from memstrata.eval.bench_scale import synthetic_queries, synthetic_turns
from memstrata.retrieval.text import content_terms
from memstrata.store import SearchFilters, fulltext, sqlite_text
from memstrata.store.sqlite import SQLiteStore

N = 600
THRESHOLD = 200
FTS5_ONLY = 10**9
QUERIES = [content_terms(q) for q in synthetic_queries(40)]


def _episodes(n: int = N, seed: int = 7, prefix: str = "e"):
    return [
        prep(f"{prefix}{i}", t["text"], speaker=t["speaker"], session=t["session"])
        for i, t in enumerate(synthetic_turns(n, seed))
    ]


def _indexed(store: SQLiteStore) -> dict[str, int | bool]:
    store.text_index_info("ns")  # the first search past the threshold starts a build
    store.wait_for_text_indexes()
    return store.text_index_info("ns")


def _filled(path: Path, seed: int = 7) -> SQLiteStore:
    store = SQLiteStore(path, text_threshold=THRESHOLD)
    store.add_episodes("ns", _episodes(N, seed))
    return store


@pytest.fixture
def built(tmp_path: Path) -> Iterator[SQLiteStore]:
    store = _filled(tmp_path / "m.db")
    assert _indexed(store) == {"indexed": N, "delta": 0, "building": False}
    yield store
    store.close()


def _fts5(path: Path, terms: list[str], limit: int, flt: SearchFilters | None = None):
    exact = SQLiteStore(path, text_threshold=FTS5_ONLY)
    try:
        assert exact.text_index_info("ns")["indexed"] == 0
        return exact.bm25_episodes("ns", terms, limit, flt)
    finally:
        exact.close()


def _as_good_as_fts5(store: SQLiteStore, path: Path, limit: int = 10) -> float:
    """Mean overlap of the store's top ``limit`` with FTS5's; and every hit it returns
    FTS5 scores at least as high as FTS5's own last hit (ties may differ, order may not:
    the same documents, ranked by the same BM25 up to its idf variant)."""
    overlaps = []
    for terms in QUERIES:
        have = store.bm25_episodes("ns", terms, limit)
        want = _fts5(path, terms, 10**6)
        score = dict(want)
        assert {k for k, _ in have} <= set(score)  # nothing FTS5 would not match
        top = want[:limit]
        if top:
            floor = top[-1][1]
            near = sum(score[k] >= floor - 0.25 for k, _ in have)
            assert near >= len(have) - 1, (terms, have, top)
        overlaps.append(len({k for k, _ in have} & {k for k, _ in top}) / max(1, len(top)))
    return sum(overlaps) / len(overlaps)


def test_the_index_finds_what_fts5_finds(built: SQLiteStore, tmp_path: Path) -> None:
    assert _as_good_as_fts5(built, tmp_path / "m.db", 10) >= 0.95
    assert _as_good_as_fts5(built, tmp_path / "m.db", 50) >= 0.95
    assert built.text_builds == 1


def test_a_quoted_term_of_several_tokens_is_a_phrase(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db", text_threshold=THRESHOLD)
    eps = _episodes(THRESHOLD)
    eps += [prep("p1", "We don't know the well-known road."), prep("p2", "Don, we know it.")]
    store.add_episodes("ns", eps)
    try:
        _indexed(store)
        keys = keys_of(store, "ns", ["p1", "p2"])
        for terms in (["don't"], ["well-known"], ["don't", "road"]):
            have = store.bm25_episodes("ns", terms, 10)
            assert [k for k, _ in have] == [keys["p1"]]
            assert {k for k, _ in _fts5(tmp_path / "m.db", terms, 10)} == {keys["p1"]}
    finally:
        store.close()


def test_reopening_takes_the_index_without_a_build(built: SQLiteStore, tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    want = [built.bm25_episodes("ns", t, 10) for t in QUERIES]
    built.close()
    again = SQLiteStore(path, text_threshold=THRESHOLD)
    try:
        assert again.text_index_info("ns") == {"indexed": N, "delta": 0, "building": False}
        assert [again.bm25_episodes("ns", t, 10) for t in QUERIES] == want
        assert again.text_builds == 0
    finally:
        again.close()


def test_new_updated_and_deleted_episodes_are_searched_as_they_are_now(
    built: SQLiteStore, tmp_path: Path
) -> None:
    path = tmp_path / "m.db"
    # new: in the delta, scored in memory
    built.add_episodes("ns", [prep("z1", "A zebra crossed the orchard."), prep("z2", "Zebra!")])
    assert built.text_index_info("ns")["delta"] == 2
    keys = keys_of(built, "ns", ["z1", "z2", "e5", "e9"])
    assert [k for k, _ in built.bm25_episodes("ns", ["zebra"], 5)] == [keys["z2"], keys["z1"]]
    # updated: the index's old text of e5 no longer matches, its new text does
    old_terms = content_terms(_episodes(6)[5].text)
    assert keys["e5"] in {k for k, _ in built.bm25_episodes("ns", old_terms, 20)}
    built.update_episodes("ns", [prep("e5", "The okapi slept.", speaker="Ana")])
    assert keys["e5"] not in {k for k, _ in built.bm25_episodes("ns", old_terms, 600)}
    assert [k for k, _ in built.bm25_episodes("ns", ["okapi"], 5)] == [keys["e5"]]
    # deleted: from the index and from the delta
    built.delete_episodes("ns", ["e9", "z1"])
    everything = {k for t in QUERIES for k, _ in built.bm25_episodes("ns", t, 600)}
    assert keys["e9"] not in everything
    assert [k for k, _ in built.bm25_episodes("ns", ["zebra"], 5)] == [keys["z2"]]
    assert _as_good_as_fts5(built, path) >= 0.95


def test_a_growing_delta_is_folded_in(
    built: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fulltext, "TEXT_FOLD", 50)
    built.update_episodes("ns", [prep("e3", "The okapi slept.")])
    built.delete_episodes("ns", ["e7", "e8"])  # deleted ones leave the index at the fold
    built.add_episodes("ns", _episodes(60, seed=5, prefix="late"))
    info = _indexed(built)  # the search that saw 61 in the delta started a fold
    assert info == {"indexed": N - 2 + 60, "delta": 0, "building": False}
    assert built.text_builds == 2
    keys = keys_of(built, "ns", ["e3"])
    assert [k for k, _ in built.bm25_episodes("ns", ["okapi"], 5)] == [keys["e3"]]
    assert _as_good_as_fts5(built, tmp_path / "m.db") >= 0.95


def test_a_large_import_is_answered_by_fts5_until_folded(
    built: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fulltext, "TEXT_FOLD", 50)
    monkeypatch.setattr(fulltext, "DELTA_MOST", 100)
    # the fold waits for the queries below: a fold done between two of them would answer
    # the later ones (the point here is what answers until it is done)
    gate, fold = threading.Event(), sqlite_text._fold
    monkeypatch.setattr(sqlite_text, "_fold", lambda *a: gate.wait(60) and fold(*a))
    built.add_episodes("ns", _episodes(150, seed=5, prefix="late"))
    for terms in QUERIES[:5]:  # not read into memory: FTS5 answers, a fold is started
        assert built.bm25_episodes("ns", terms, 10) == _fts5(tmp_path / "m.db", terms, 10)
    assert built.text_index_info("ns")["delta"] == 0
    assert built.text_builds == 2  # the first build, and the fold this import started
    gate.set()
    built.wait_for_text_indexes()
    assert built.text_index_info("ns") == {"indexed": N + 150, "delta": 0, "building": False}
    assert _as_good_as_fts5(built, tmp_path / "m.db") >= 0.95


def test_an_index_holding_more_than_its_manifest_counts_each_episode_once(
    built: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash between a fold's commit and its manifest: the index holds documents the
    manifest says it lacks, so the delta holds them too."""
    path = tmp_path / "m.db"
    manifest = Path(str(path) + "-fts") / "ns1.json"
    before = manifest.read_text()
    monkeypatch.setattr(fulltext, "TEXT_FOLD", 10)
    built.add_episodes("ns", [prep(f"z{i}", f"A zebra number {i}.") for i in range(12)])
    _indexed(built)
    built.close()
    manifest.write_text(before)  # the fold's commit stays, its manifest is lost
    again = SQLiteStore(path, text_threshold=THRESHOLD)
    try:
        hits = again.bm25_episodes("ns", ["zebra"], 50)
        assert len(hits) == len({k for k, _ in hits}) == 12
        assert again.text_index_info("ns")["delta"] == 12
        _indexed(again)  # folds again: the twelve are replaced, not added twice
        assert again.text_index_info("ns") == {"indexed": N + 12, "delta": 0, "building": False}
        assert len(again.bm25_episodes("ns", ["zebra"], 50)) == 12
    finally:
        again.close()


def test_filters_are_answered_by_fts5(built: SQLiteStore, tmp_path: Path) -> None:
    flt = SearchFilters(speakers=["Ana", "Ben"])
    for terms in QUERIES[:10]:
        assert built.bm25_episodes("ns", terms, 10, flt) == _fts5(tmp_path / "m.db", terms, 10, flt)


@pytest.mark.parametrize("damage", ["manifest", "segments", "foreign", "unfinished"])
def test_an_unusable_index_is_rebuilt_and_fts5_answers_meanwhile(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m.db"
    store = _filled(path)
    _indexed(store)
    store.close()
    root = Path(str(path) + "-fts")
    folder = next(p for p in root.iterdir() if p.is_dir())
    if damage == "manifest":
        (root / "ns1.json").write_text("{not json")
    elif damage == "segments":  # every segment file emptied
        for file in folder.iterdir():
            if file.suffix not in (".json", ".lock") and not file.name.startswith("."):
                replace_bytes(file, b"")
        (folder / "meta.json").write_text("{}")
    elif damage == "foreign":  # another store's index, for a namespace with the same id
        elsewhere = tmp_path / "other.db"
        other = _filled(elsewhere, seed=99)
        _indexed(other)
        other.close()
        shutil.rmtree(root)
        shutil.copytree(str(elsewhere) + "-fts", root)
    else:  # a build killed before its manifest: a folder nothing names
        (root / "ns1.json").unlink()
    again = SQLiteStore(path, text_threshold=THRESHOLD)
    try:
        with caplog.at_level(logging.WARNING, logger="memstrata.store.sqlite_text"):
            for terms in QUERIES[:5]:  # FTS5 answers while the index is rebuilt
                assert again.bm25_episodes("ns", terms, 10) == _fts5(path, terms, 10)
        if damage != "unfinished":
            assert "unusable" in caplog.text and "rebuilt" in caplog.text
        assert _indexed(again) == {"indexed": N, "delta": 0, "building": False}
        assert again.text_builds == 1
        assert [p.name for p in root.iterdir() if p.is_dir()] == [
            json.loads((root / "ns1.json").read_text())["folder"]
        ]  # the old folder went
        assert _as_good_as_fts5(again, path) >= 0.95
    finally:
        again.close()


def test_an_index_another_connection_built_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    builder = SQLiteStore(path, text_threshold=THRESHOLD)
    reader = SQLiteStore(path, text_threshold=THRESHOLD)
    try:
        builder.add_episodes("ns", _episodes(150))
        assert reader.text_index_info("ns")["indexed"] == 0
        builder.add_episodes("ns", _episodes(N, seed=3, prefix="more"))
        _indexed(builder)
        assert reader.text_index_info("ns") == {"indexed": N + 150, "delta": 0, "building": False}
        assert reader.text_builds == 0 and builder.text_builds == 1
    finally:
        builder.close()
        reader.close()


def test_deleting_the_namespace_removes_its_index(built: SQLiteStore, tmp_path: Path) -> None:
    root = Path(str(tmp_path / "m.db") + "-fts")
    assert any(root.iterdir())
    built.delete_namespace("ns")
    assert not any(root.iterdir())


def test_a_store_in_memory_keeps_to_fts5() -> None:
    store = SQLiteStore(":memory:", text_threshold=10)
    try:
        store.add_episodes("ns", _episodes(50))
        assert store.bm25_episodes("ns", ["garden"], 5)
        assert store.text_index_info("ns")["indexed"] == 0 and store.text_builds == 0
    finally:
        store.close()


def test_a_large_namespace_keeps_its_episode_count_across_writes_for_a_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting a large namespace reads all of it: the count of one past the threshold
    is kept for a few seconds across writes, the document frequencies are not."""
    from memstrata.store import sqlite_text

    store = SQLiteStore(tmp_path / "c.db", text_threshold=4)
    small = SQLiteStore(tmp_path / "s.db", text_threshold=FTS5_ONLY)
    for s in (store, small):
        s.add_episodes("ns", [prep(f"a{i}", f"The cat number {i} sleeps.") for i in range(5)])
        assert s.doc_freqs("ns", ["cat"]) == (5, {"cat": 5})
        s.add_episodes("ns", [prep("b", "A cat and a dog.")])
    assert store.doc_freqs("ns", ["cat", "dog"]) == (5, {"cat": 6, "dog": 1})  # kept
    assert small.doc_freqs("ns", ["cat", "dog"]) == (6, {"cat": 6, "dog": 1})  # counted
    monkeypatch.setattr(sqlite_text, "_COUNT_KEPT_S", 0.0)
    assert store.doc_freqs("ns", ["cat"]) == (6, {"cat": 6})
    store.close()
    small.close()
