"""Bad input, damaged files, locks, concurrent writers and crashes: each fails loudly and
clearly, or survives intact. Real files, real subprocesses, the real embedder."""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Config
from memstrata.errors import (
    InvalidInputError,
    NamespaceNotFoundError,
    StoreError,
    StoreLockedError,
)
from memstrata.memory import Memory
from memstrata.store import PreparedEpisode, SearchFilters, SQLiteStore, open_store
from waiting import until


@pytest.fixture
def mem(tmp_path: Path, embedder):
    m = Memory.open(tmp_path / "m.db", embedder=embedder)
    yield m
    m.close()


def prep(eid: str, text: str) -> PreparedEpisode:
    h = hashlib.sha256(text.encode()).digest()[:16]
    return PreparedEpisode(external_id=eid, text=text, content_hash=h, index_text=text)


def count(path: Path, sql: str = "SELECT COUNT(*) FROM episodes") -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


# input validation -----------------------------------------------------------------------
@pytest.mark.parametrize("text", ["", " ", "\n\t  \r\n", "\u00a0\u2003"])
def test_empty_or_whitespace_text_is_refused(mem: Memory, text: str) -> None:
    with pytest.raises(InvalidInputError, match="empty text"):
        mem.add(text)
    with pytest.raises(InvalidInputError, match=r"item 0: .*empty text"):
        mem.add_many([text])
    assert mem.namespaces() == []


@pytest.mark.slow  # three full tokenizer passes over 1 MB: about 4 s on two cores
def test_one_megabyte_text_is_stored_whole_and_found_by_a_word_near_its_end(mem: Memory) -> None:
    filler = "lorem ipsum dolor sit amet consectetur adipiscing elit "
    big = (filler * (1_048_576 // len(filler) + 1))[: 1_048_576 - 20] + " zanzibarquux finale"
    assert len(big) == 1_048_576
    mem.add(big, id="big")
    mem.add_many([{"id": f"s{i}", "text": f"lorem ipsum short note {i}"} for i in range(3)])
    assert mem.get(["big"])[0].text == big
    res = mem.search("zanzibarquux", k=2, max_tokens=200)
    assert res.hits[0].id == "big" and "bm25" in res.hits[0].routes
    assert res.context_tokens <= 201
    ns_key = mem.get(["big"])[0].key
    assert [k for k, _ in mem.store.bm25_episodes("default", ["zanzibarquux"], 5)] == [ns_key]


def test_text_over_max_episode_chars_is_refused_with_the_limit(tmp_path: Path, embedder) -> None:
    with Memory.open(
        tmp_path / "m.db", embedder=embedder, config=Config(max_episode_chars=100)
    ) as m:
        assert m.add("x" * 100).text == "x" * 100  # the limit itself is allowed
        with pytest.raises(
            InvalidInputError, match=r"101 characters.*limit of 100.*max_episode_chars"
        ):
            m.add("y" * 101, id="long")
        with pytest.raises(InvalidInputError, match=r"item 1: .*limit of 100"):
            m.add_many(["fine", "z" * 500])
        assert m.stats()["namespaces"][0]["episodes"] == 1


def test_invalid_utf8_bytes_name_the_byte_and_position(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match=r"not valid UTF-8: byte 0xc3 at position 3"):
        mem.add(b"caf\xc3 au lait")
    with pytest.raises(InvalidInputError, match=r"item 1: .*byte 0xff at position 0"):
        mem.add_many([b"valid bytes", b"\xff\xfe"])
    assert mem.add("café au lait".encode()).text == "café au lait"


def test_lone_surrogate_is_refused(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match=r"not valid Unicode .*surrogate.*position 3"):
        mem.add("abc\ud800def")
    with pytest.raises(InvalidInputError, match=r"item 0: .*not valid Unicode"):
        mem.add_many([{"text": "\udfff", "id": "s"}])
    assert mem.namespaces() == []


@pytest.mark.parametrize("at", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
def test_a_time_whose_utc_instant_is_out_of_range_is_refused(mem: Memory, at: str) -> None:
    """Its offset takes it before year 1 or past 9999 in UTC, where the routes that read
    times (the days a question names) cannot place it: refused, nothing stored."""
    with pytest.raises(InvalidInputError, match="out of range"):
        mem.add("the edge of time", occurred_at=at)
    assert mem.namespaces() == []
    with pytest.raises(ValueError, match="out of range"):
        SearchFilters(since=at)
    mem.add("the first day", occurred_at="0001-01-01T00:00:00+00:00")  # the edge itself is fine
    assert mem.search("first day").hits


def test_add_many_with_one_bad_item_stores_nothing(mem: Memory) -> None:
    mem.add("already here", id="old")
    items = [{"id": f"g{i}", "text": f"good item {i}"} for i in range(5)]
    items.insert(3, {"id": "bad", "text": "   "})
    with pytest.raises(InvalidInputError, match="item 3"):
        mem.add_many(items, batch_size=1)  # even with one commit per item
    assert mem.get([f"g{i}" for i in range(5)]) == []
    with pytest.raises(InvalidInputError, match="item 2"):
        mem.add_many(items[:2] + [{"text": "ok", "occurred_at": "not a date"}], namespace="fresh")
    assert mem.namespaces() == ["default"]
    assert mem.stats()["namespaces"][0]["episodes"] == 1


def test_unknown_namespace_is_named_in_the_error(mem: Memory) -> None:
    mem.add("something", id="a")
    for call in (
        lambda: mem.search("something", namespace="ghost-ns"),
        lambda: mem.search_many(["x"], namespace="ghost-ns"),
        lambda: mem.delete(["a"], namespace="ghost-ns"),
        lambda: mem.delete_namespace("ghost-ns"),
        lambda: mem.list(namespace="ghost-ns"),
        lambda: mem.stats("ghost-ns"),
    ):
        with pytest.raises(NamespaceNotFoundError, match="unknown namespace 'ghost-ns'") as info:
            call()
        assert info.value.namespace == "ghost-ns"
    assert mem.get(["a"])[0].text == "something"


# damaged and foreign files --------------------------------------------------------------
def test_corrupt_file_is_refused_and_left_untouched(tmp_path: Path, embedder) -> None:
    path = tmp_path / "junk.db"
    data = random.Random(7).randbytes(64 * 1024)
    path.write_bytes(data)
    with pytest.raises(StoreError, match="corrupt"):
        open_store(path)
    with pytest.raises(StoreError, match=r"not a memstrata database or is corrupt"):
        Memory.open(path, embedder=embedder)
    assert path.read_bytes() == data


def test_damaged_pages_surface_as_store_error(tmp_path: Path, embedder) -> None:
    path = tmp_path / "m.db"
    with Memory.open(path, embedder=embedder) as m:
        m.add_many([f"sentence number {i} about things" for i in range(200)])
        m.stats()  # checkpoints the WAL into the main file
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(size // 2)
        f.write(random.Random(3).randbytes(size // 4))
    conn = sqlite3.connect(path)
    with contextlib.suppress(sqlite3.DatabaseError):  # the damage is real and detectable
        assert conn.execute("PRAGMA integrity_check").fetchone() != ("ok",)
    conn.close()
    with (
        pytest.raises((StoreError, sqlite3.DatabaseError)) as info,
        Memory.open(path, embedder=embedder) as m,
    ):
        m.search("sentence number 5")
        m.add("one more")
    assert isinstance(info.value, StoreError), f"raw {type(info.value).__name__}: {info.value}"
    assert "corrupt" in str(info.value) or "malformed" in str(info.value)


def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO users VALUES ('ana')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a memstrata one"):
        open_store(path)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT name FROM users").fetchall() == [("ana",)]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert tables == {"users"}


def test_foreign_sqlite_database_journal_mode_is_not_changed(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError):
        open_store(path)
    conn = sqlite3.connect(path)
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    assert mode == "delete"


def test_directory_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open"):
        SQLiteStore(tmp_path)


# locks and concurrency ------------------------------------------------------------------
HOLD_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()  # held until the test kills this process
"""


def test_write_while_another_process_holds_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    store = SQLiteStore(path, busy_timeout_ms=200)
    store.add_episodes("ns", [prep("before", "written before the lock")])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreLockedError, match=r"locked by another process.*busy timeout"):
            store.add_episodes("ns", [prep("during", "written during the lock")])
        # the write gave up after SQLite's busy handler had waited the store's timeout
        assert store._conn.execute("PRAGMA busy_timeout").fetchone() == (200,)
        # readers are not blocked (WAL); a second store opens (an up-to-date schema needs no
        # write lock) and reads, and its writes fail fast and clearly too
        assert [e.id for e in store.get_episodes("ns", ["before"])] == ["before"]
        second = SQLiteStore(path, busy_timeout_ms=200)
        assert second.existing_ids("ns", ["before"]) == {"before"}
        with pytest.raises(StoreLockedError, match="locked"):
            second.add_episodes("ns", [prep("second", "from the second store")])
        second.close()
    finally:
        holder.kill()
        holder.wait()
    report = store.add_episodes("ns", [prep("after", "written after the lock")])
    assert report.added == ["after"]
    assert store.existing_ids("ns", ["before", "during", "after"]) == {"before", "after"}
    store.close()


IMPORTER = """
import sys
from memstrata.embed import MiniLMEmbedder
from memstrata.memory import Memory
path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
emb = MiniLMEmbedder(workers=1)
print("ready", flush=True)
sys.stdin.readline()
with Memory.open(path, embedder=emb) as m:
    items = [{"id": f"{tag}-{i}", "text": f"{tag} wrote note {i} on topic {i % 17}"}
             for i in range(n)]
    report = m.add_many(items, batch_size=25)
print(len(report.added), flush=True)
"""


def _open_and_close(path: str, start: Any) -> str:
    start.wait()  # a barrier: the three go at once
    try:
        SQLiteStore(path).close()
    except Exception as exc:  # reported to the parent, which asserts on it
        return repr(exc)
    return "ok"


def test_processes_creating_one_new_file_at_once_all_succeed(tmp_path: Path) -> None:
    """Setting WAL and migrating a brand-new file races; every opener must get through."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    failures = []
    with ctx.Pool(3) as pool:
        for round_ in range(40):
            path = str(tmp_path / f"new-{round_}.db")
            with ctx.Manager() as manager:
                start = manager.Barrier(3)
                pending = [pool.apply_async(_open_and_close, (path, start)) for _ in range(3)]
                failures += [r for r in (p.get(timeout=60) for p in pending) if r != "ok"]
            assert SQLiteStore(path).schema_version() >= 1
    assert failures == []


@pytest.mark.slow
def test_two_processes_import_into_one_file(tmp_path: Path, subprocess_env) -> None:
    path = tmp_path / "shared.db"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", IMPORTER, str(path), tag, "300"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env,
        )
        for tag in ("left", "right")
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:  # both open the (not yet existing) file and write at the same time
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        outputs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err[-2000:]
        assert out.strip() == "300"
    assert count(path) == 600
    for tag in ("left", "right"):
        assert count(path, f"SELECT COUNT(*) FROM episodes WHERE external_id LIKE '{tag}-%'") == 300
    assert count(path, "SELECT COUNT(DISTINCT seq) FROM episodes") == 600
    assert count(path, "SELECT MAX(seq) FROM episodes") == 600
    assert count(path, "SELECT COUNT(*) FROM fts_1") == 600
    assert (
        count(path, "SELECT COUNT(*) FROM episodes e JOIN embeddings v ON v.hash = e.embed_hash")
        == 600
    )
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


CRASHING_IMPORT = """
import sys
from memstrata.embed import MiniLMEmbedder
from memstrata.memory import Memory
path, template, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Memory.open(path, embedder=MiniLMEmbedder()) as m:
    m.add_many([{"id": f"doc-{i}", "text": template.format(i=i)} for i in range(n)],
               batch_size=100)
print("finished", flush=True)
"""
TEMPLATE = "note {i} code X{i}Z"


@pytest.mark.slow
def test_kill_9_during_import_leaves_whole_batches_and_resumes(
    tmp_path: Path, embedder, subprocess_env
) -> None:
    path = tmp_path / "crash.db"
    child = subprocess.Popen(
        [sys.executable, "-c", CRASHING_IMPORT, str(path), TEMPLATE, "3000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=subprocess_env,
    )
    try:

        def committed() -> int:
            assert child.poll() is None, child.communicate()[1][-2000:]
            if path.exists():
                with contextlib.suppress(sqlite3.OperationalError):  # no schema yet, or busy
                    return count(path)
            return 0

        until(committed, "the import committed a batch")
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    stored = count(path)
    assert 0 < stored < 3000 and stored % 100 == 0  # only whole batches are visible
    assert count(path, "SELECT COUNT(*) FROM episodes e JOIN fts_1 f ON f.rowid = e.id") == stored
    assert count(path, "SELECT COUNT(*) FROM fts_1") == stored
    assert (
        count(
            path,
            "SELECT COUNT(*) FROM episodes e JOIN embeddings v "
            "ON v.hash = e.embed_hash AND v.model = 'all-MiniLM-L6-v2-int8'",
        )
        == stored
    )

    items = [{"id": f"doc-{i}", "text": TEMPLATE.format(i=i)} for i in range(3000)]
    with Memory.open(path, embedder=embedder) as m:
        probe = stored - 1  # batches commit in order, so the last stored one is doc-(stored-1)
        res = m.search(f"item code X{probe}Z", k=3)
        assert f"doc-{probe}" in [h.id for h in res.hits]
        report = m.add_many(items, batch_size=100)
        assert len(report.existing) == stored and len(report.added) == 3000 - stored
        again = m.add_many(items[:300], batch_size=100)
        assert again.added == [] and len(again.existing) == 300
        assert m.stats()["namespaces"][0]["episodes"] == 3000
    assert count(path, "SELECT COUNT(DISTINCT external_id) FROM episodes") == 3000
    assert count(path, "SELECT COUNT(DISTINCT seq) FROM episodes") == 3000
    assert count(path, "SELECT COUNT(*) FROM fts_1") == 3000


def test_embedder_failure_writes_nothing_and_says_why(tmp_path: Path) -> None:
    """A batch is stored with its vectors or not at all; the caller keeps the input."""
    import socket

    from memstrata.embed import EmbeddingBackendError, OpenAIEmbedder

    with socket.socket() as s:  # a port with nobody listening: a real connection refusal
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = OpenAIEmbedder(f"http://127.0.0.1:{port}/v1", "m", dim=8, timeout=2.0)
    path = tmp_path / "e.db"
    with Memory.open(path, embedder=dead) as m:
        with pytest.raises(EmbeddingBackendError, match="embeddings request failed"):
            m.add_many([{"id": "a", "text": "kept by the caller"}])
        assert m.namespaces() == [] or m.stats()["namespaces"][0]["episodes"] == 0
    assert count(path) == 0
