"""Deleted means gone (issue 58, item 3): after ``delete`` no byte of the text, and no
LLM reply made from it, is left in any file memstrata wrote; after ``update`` with
``keep_history=False`` the same holds for the replaced text.

Real stores (SQLite, and PostgreSQL after the documented ``vacuum``), the real MiniLM,
three designs built (the default recipe, Mnemis on the heuristic tier, MemTree on the
LLM tier through the scripted LLM, whose replies quote the turns they summarise, so the
response cache holds replies made from the secret turn), a job record and repairs. The
check is a byte-level scan of every file under the store's folder (and, for PostgreSQL,
the server's data folder).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import memstrata
import pgtest
from erasure_helpers import (
    NS,
    build_everything,
    files_holding,
    folders,
    open_memory,
    scan,
    settle,
    summarize,
    turns,
    use_llm,
)
from memstrata.llm import ResponseCache, ScriptedBackend
from memstrata.store import ann as ann_mod
from memstrata.store import fulltext


@pytest.fixture
def secret() -> str:
    return "hunter" + uuid.uuid4().hex[:10]


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedBackend]:
    """The LLM every memory opened in the test gets, with the response cache in the
    configured ``llm.cache_dir``."""
    backend = ScriptedBackend([summarize] * 400)
    with use_llm(monkeypatch, backend):
        yield backend


def test_a_deleted_turn_leaves_no_byte_in_any_file(
    store_at: Callable[[str], str],
    tmp_path: Path,
    embedder: Any,
    scripted: ScriptedBackend,
    secret: str,
) -> None:
    target = store_at("m")
    cache_dir = tmp_path / "cache"
    with open_memory(target, embedder, cache_dir, llm=False) as m:
        build_everything(m, secret)
    with open_memory(target, embedder, cache_dir, llm=True) as m:
        reports = m.build(recipe="deep")  # the LLM tier: replies quote the turns
        assert all(not r.errors for r in reports)
        assert scripted.requests
        assert any(secret in r.messages[-1].content for r in scripted.requests)
        assert m.store.add_job(NS, "job_erase", "add", "deep", ["memtree"], ["t2", "t3"])
        if target.startswith("postgres"):
            m.store._conn.execute("ANALYZE")  # type: ignore[attr-defined]
        # before: the text is in the store, the indexes and the cached replies
        before = scan(folders(target, tmp_path), secret)
        assert any("cache" in f for f in before), before

        assert m.delete(["t2"]) == 1

        assert m.stats(NS)["namespaces"][0]["repairs"] == {}
        settle(m, target)
        assert scan(folders(target, tmp_path), secret) == []
        # the other turns are all still found, and replies of other prompts are kept
        for t in turns(secret):
            if t["id"] != "t2":
                hits = m.search(t["text"], k=3).hits
                assert t["id"] in {s for h in hits for s in h.sources}, t["id"]


def test_postgres_keeps_the_deleted_text_until_vacuum(
    tmp_path: Path, embedder: Any, secret: str
) -> None:
    """What docs/postgres.md says: a delete leaves dead rows in the server's files;
    ``vacuum`` (``memstrata pg vacuum``) rewrites them away."""
    target = pgtest.database_url(tmp_path / "pg")
    try:
        with open_memory(target, embedder, tmp_path / "cache", llm=False) as m:
            m.add_many(turns(secret))
            m.store._conn.execute("CHECKPOINT")  # type: ignore[attr-defined]
            assert m.delete(["t2"]) == 1
            data = pgtest.local_server().folder / "data"
            assert files_holding(data, secret) != []
            report = m.store.vacuum()  # type: ignore[attr-defined]
            assert "episodes" in report["tables"] and report["statistics"]
            assert files_holding(data, secret) == []
    finally:
        pgtest.drop(tmp_path / "pg")


def test_a_large_namespace_loses_its_index_files_with_the_text(
    tmp_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch, secret: str
) -> None:
    """From the thresholds on, a namespace has a tantivy index and a vector graph beside
    the store: their segments and slots keep what a delete removed, so they go, and the
    namespace is searched exactly until they are built again."""
    monkeypatch.setattr(fulltext, "TEXT_THRESHOLD", 20)
    monkeypatch.setattr(ann_mod, "ANN_THRESHOLD", 20)
    target = str(tmp_path / "big.db")
    filler = [
        {"id": f"f{i}", "text": f"Filler note number {i} about the garden and tomatoes."}
        for i in range(30)
    ]
    with open_memory(target, embedder, tmp_path / "cache", llm=False) as m:
        m.add_many(turns(secret) + filler)
        store = m.store
        m.search("tomatoes garden", k=3)  # the first searches start the builds
        store.wait_for_text_indexes()  # type: ignore[attr-defined]
        store.wait_for_vector_indexes()  # type: ignore[attr-defined]
        m.search("tomatoes garden", k=3)
        assert store.text_index_info(NS)["indexed"] == 36  # type: ignore[attr-defined]
        assert list((tmp_path / "big.db-ann").glob("*.usearch"))
        # tantivy keeps its terms in a compressed dictionary: asked, not grepped
        (term,) = fulltext.terms_of(secret)
        assert held_by_index(tmp_path / "big.db-fts", store, term) > 0

        assert m.delete(["t2"]) == 1

        assert files_holding(tmp_path, secret) == []
        assert held_by_index(tmp_path / "big.db-fts", store, term) == 0
        assert not list((tmp_path / "big.db-ann").glob("*.usearch"))
        hits = m.search("Grandma Odile apricot tart", k=3).hits
        assert "t5" in {s for h in hits for s in h.sources}


def held_by_index(root: Path, store: Any, term: str) -> int:
    """Documents of the namespace's tantivy index (if it has one) holding ``term``,
    deleted ones included: a delete only marks them until a merge."""
    index = fulltext.TextIndex.load(root, store._ns_id(NS))
    return 0 if index is None else index.doc_freq(term)


def test_an_update_without_history_erases_the_replaced_text(
    store_at: Callable[[str], str], tmp_path: Path, embedder: Any, secret: str
) -> None:
    target = store_at("m")
    with open_memory(target, embedder, tmp_path / "cache", llm=False) as m:
        build_everything(m, secret)
        m.update("t2", "The wifi password was changed; ask Ana for it.")
        assert [v.text for v in m.history("t2")][0].startswith("My secret wifi")
        m.update("t2", "The router is in the hall cupboard.", keep_history=False)
        assert m.history("t2") == []
        assert m.get(["t2"])[0].text == "The router is in the hall cupboard."
        settle(m, target)
        assert scan(folders(target, tmp_path), secret) == []
        key = m.get(["t2"])[0].key
        assert key in {k for k, _ in m.store.bm25_episodes(NS, ["cupboard"], 5)}


def test_the_cli_delete_leaves_no_byte_in_any_file(
    tmp_path: Path, embedder: Any, secret: str
) -> None:
    db = tmp_path / "cli.db"
    with open_memory(str(db), embedder, tmp_path / "cache", llm=False) as m:
        build_everything(m, secret)
    before = files_holding(tmp_path, secret)
    assert before
    src = str(Path(memstrata.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "memstrata", "delete", "--db", str(db), "-n", NS, "--id", "t2"]
        + ["--yes"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert files_holding(tmp_path, secret) == []


def test_a_cache_purge_drops_only_replies_whose_prompt_had_a_removed_word(
    tmp_path: Path,
) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        cache.put("a", "reply a", ["cabin", "zanzibar"])
        cache.put("b", "reply b", ["cabin", "canoe"])
        cache.put("c", "reply c", ["tart"])
        assert cache.purge(["I flew to Zanzibar!"]) == 1
        assert cache.get("a") is None and cache.get("b") == "reply b"
        # a text of stopwords only gives no word to look for: everything goes
        assert cache.purge(["it is what it is"]) == 2
        assert len(cache) == 0
