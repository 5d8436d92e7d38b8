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
