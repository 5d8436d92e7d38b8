"""SQLite-specific behaviour of the embedded store: files, URLs, schema bookkeeping."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memstrata.errors import ConfigError, StoreError
from memstrata.store import SQLiteStore, open_store
from memstrata.store.sqlite import _migrations


def test_schema_version_recorded_in_meta_table(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = open_store(path)
    latest = _migrations()[-1][0]
    assert store.schema_version() == latest
    store.close()
    conn = sqlite3.connect(path)
    assert conn.execute(
        "SELECT value FROM memstrata_meta WHERE key='schema_version'"
    ).fetchone() == (str(latest),)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"episodes", "embeddings", "records", "provenance", "namespaces"} <= tables
    conn.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    open_store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE memstrata_meta SET value='999' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"schema version 999.*upgrade memstrata"):
        open_store(path)


def test_open_store_accepts_paths_and_sqlite_urls(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b" / "s.db"
    s = open_store(f"sqlite:///{nested}")
    assert isinstance(s, SQLiteStore) and nested.exists() and s.url == f"sqlite:///{nested}"
    s.close()
    mem = open_store(":memory:")
    assert mem.namespaces() == [] and mem.size_bytes() > 0
    mem.close()
    with pytest.raises(StoreError, match="no PostgreSQL server answers"):
        open_store("postgresql://127.0.0.1:1/db")  # a URL is PostgreSQL's, never a file
    with pytest.raises(ConfigError, match="unsupported store URL"):
        open_store("redis://localhost/0")


def test_speaker_counts_are_filled_from_a_store_written_before_them(tmp_path: Path) -> None:
    """Schema v9 keeps speakers' counts; opening an older store counts the episodes it
    already holds, and the counts stay right as it is written."""
    import hashlib

    from memstrata.store import PreparedEpisode

    def prep(eid: str, text: str, speaker: str) -> PreparedEpisode:
        digest = hashlib.sha256(f"{eid}:{text}".encode()).digest()[:16]
        return PreparedEpisode(
            external_id=eid, text=text, speaker=speaker, content_hash=digest, index_text=text
        )

    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    store.add_episodes(
        "ns", [prep(str(i), f"t{i}", speaker="al" if i % 3 else "bo") for i in range(9)]
    )
    store.close()
    conn = sqlite3.connect(path)  # back to schema v8: no counts
    conn.execute("DROP TABLE speaker_counts")
    conn.execute("ALTER TABLE llm_calls DROP COLUMN reasoning_tokens")  # v14's
    conn.execute("UPDATE memstrata_meta SET value='8' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    store = SQLiteStore(path)
    assert store.schema_version() >= 9
    assert store.speakers("ns") == ["al", "bo"]  # 6 and 3, counted at the migration
    store.add_episodes("ns", [prep(str(i), "x", speaker="bo") for i in range(10, 14)])
    assert store.speakers("ns") == ["bo", "al"]  # 7 against 6
    store.close()


def test_vectors_move_to_a_rowid_table_and_pack_their_pages(tmp_path: Path) -> None:
    """Schema v10 keeps vectors in a rowid table with a unique (model, hash) index: a store
    written with the older WITHOUT ROWID table keeps every vector, the cache still writes
    each hash once, and stored vectors take under 900 bytes each (1,029 before)."""
    import numpy as np

    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((3000, 384)).astype(np.float32)
    keys = [i.to_bytes(16, "big") for i in rng.permutation(3000).tolist()]
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    store.close()
    conn = sqlite3.connect(path)  # back to schema v9: the table keyed by (model, hash)
    conn.executescript(
        "DROP TABLE embeddings; CREATE TABLE embeddings (model TEXT NOT NULL, hash BLOB "
        "NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (model, hash)) WITHOUT ROWID;"
        "ALTER TABLE llm_calls DROP COLUMN reasoning_tokens;"  # v14's
        "UPDATE memstrata_meta SET value='9' WHERE key='schema_version';"
    )
    conn.close()
    conn = sqlite3.connect(path)
    conn.executemany(
        "INSERT INTO embeddings VALUES (?,?,?)",
        [("m", k, v.astype(np.float16).tobytes()) for k, v in zip(keys, vecs, strict=True)],
    )
    conn.commit()
    conn.close()
    store = SQLiteStore(path)
    assert store.schema_version() >= 10
    got = store.cached_embeddings("m", keys)
    assert len(got) == 3000
    assert np.allclose(got[keys[5]], vecs[5], atol=1e-2)
    store.put_embeddings("m", [(keys[0], vecs[1]), (b"\xff" * 16, vecs[2])])
    assert np.allclose(store.cached_embeddings("m", [keys[0]])[keys[0]], vecs[0], atol=1e-2)
    store.put_embeddings(
        "m", list(zip([(i + 5000).to_bytes(16, "big") for i in range(3000)], vecs, strict=True))
    )
    store.close()
    conn = sqlite3.connect(path)
    ddl = conn.execute("SELECT sql FROM sqlite_master WHERE name='embeddings'").fetchone()[0]
    assert "WITHOUT ROWID" not in ddl
    assert conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] == 6001
    pages = conn.execute(
        "SELECT SUM(pgsize) FROM dbstat WHERE name IN ('embeddings', 'embeddings_key')"
    ).fetchone()[0]
    conn.close()
    assert pages / 6001 < 900


def test_links_and_job_members_take_their_namespace_id(tmp_path: Path) -> None:
    """Schema v15 gives ``record_links`` and ``job_episodes`` the namespace's id first, as
    on PostgreSQL: a store written with the v14 tables keeps every link and job member."""
    import hashlib

    from memstrata.store import PreparedEpisode

    def prep(eid: str) -> PreparedEpisode:
        digest = hashlib.sha256(eid.encode()).digest()[:16]
        return PreparedEpisode(external_id=eid, text=eid, content_hash=digest, index_text=eid)

    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    store.add_episodes("a", [prep("a1"), prep("a2")])
    store.add_episodes("b", [prep("b1")])
    assert store.add_job("a", "job-a", "add", "basic", ["x"], ["a1", "a2"]) == 2
    assert store.add_job("b", "job-b", "add", "basic", ["x"], ["b1"]) == 1
    store.close()
    conn = sqlite3.connect(path)  # back to schema v14: neither table has namespace_id
    ns = dict(conn.execute("SELECT name, id FROM namespaces"))
    rows = [(f"r{i}", ns[name]) for i, name in enumerate("aab")]
    conn.executemany(
        "INSERT INTO records(id, namespace_id, kind, data, created_at, updated_at, builder) "
        "VALUES (?, ?, 'k', '{}', '', '', 'x')",
        rows,
    )
    conn.executescript(
        "DROP TABLE record_links; CREATE TABLE record_links (parent_id TEXT NOT NULL "
        "REFERENCES records(id) ON DELETE CASCADE, child_id TEXT NOT NULL REFERENCES "
        "records(id) ON DELETE CASCADE, PRIMARY KEY (parent_id, child_id)) WITHOUT ROWID;"
        "CREATE INDEX record_links_child ON record_links(child_id);"
        "INSERT INTO record_links VALUES ('r0', 'r1');"
        "CREATE TABLE old_members AS SELECT job, episode_id FROM job_episodes;"
        "DROP TABLE job_episodes; CREATE TABLE job_episodes (job INTEGER NOT NULL "
        "REFERENCES jobs(key) ON DELETE CASCADE, episode_id INTEGER NOT NULL REFERENCES "
        "episodes(id) ON DELETE CASCADE, PRIMARY KEY (job, episode_id)) WITHOUT ROWID;"
        "INSERT INTO job_episodes SELECT job, episode_id FROM old_members;"
        "DROP TABLE old_members;"
        "UPDATE memstrata_meta SET value='14' WHERE key='schema_version';"
    )
    conn.close()
    store = SQLiteStore(path)
    assert store.schema_version() == _migrations()[-1][0]
    job = store.job("job-a")
    assert job is not None and job.present == 2
    assert store.export_namespace("a").links == [("r0", "r1")]
    store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT * FROM record_links").fetchall() == [(ns["a"], "r0", "r1")]
    members = conn.execute("SELECT namespace_id, COUNT(*) FROM job_episodes GROUP BY 1")
    assert dict(members.fetchall()) == {ns["a"]: 2, ns["b"]: 1}
    conn.close()
