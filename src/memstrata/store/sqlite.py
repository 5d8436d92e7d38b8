"""Embedded store: one SQLite file in WAL mode, FTS5 for BM25, an in-process vector index.

This module holds the connection, migrations, deletes of namespaces and episodes, and the
hooks of the shared rules (``store/sql/``: episodes, updates, records, builds, jobs,
usage, erasure, transfer). The rest of ``SQLiteStore`` lives in parts, one responsibility
each, deriving from the host class ``sqlite_base.SQLiteBase`` (and from the shared rule
they complete): ``sqlite_search`` (embedding cache, the vector index and why it is
exact), ``sqlite_text`` (BM25: FTS5, and a full-text index for large namespaces),
``sqlite_records`` (derived records and provenance), ``sqlite_builds`` (build queue),
``sqlite_updates`` (the hooks of updates) and ``sqlite_transfer`` (a namespace in, for
``memstrata copy``).
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from memstrata.errors import StoreError, StoreLockedError
from memstrata.store.base import (
    DeleteReport,
    RemovedEpisode,
    Store,
)
from memstrata.store.sql.common import chunks as _chunks
from memstrata.store.sql.common import migrations
from memstrata.store.sql.episodes import EpisodeRules
from memstrata.store.sql.host import speak_store_errors
from memstrata.store.sql.jobs import Jobs
from memstrata.store.sql.keys import ApiKeys
from memstrata.store.sql.usage import LLMAccounting
from memstrata.store.sqlite_base import SQLiteBase
from memstrata.store.sqlite_builds import BuildBookkeeping
from memstrata.store.sqlite_common import _fts, _rewrite_fts, _split_sql, translate
from memstrata.store.sqlite_erasure import Erasure
from memstrata.store.sqlite_indexes import IndexUpkeep
from memstrata.store.sqlite_records import DerivedRecords
from memstrata.store.sqlite_search import SearchPrimitives
from memstrata.store.sqlite_text import TextSearch
from memstrata.store.sqlite_transfer import Transfer
from memstrata.store.sqlite_updates import EpisodeUpdates

BUSY_TIMEOUT_MS = 30_000


def _migrations() -> list[tuple[int, str]]:
    return migrations("sqlite")


class SQLiteStore(
    Erasure,
    Transfer,
    ApiKeys,
    Jobs,
    BuildBookkeeping,
    DerivedRecords,
    IndexUpkeep,
    SearchPrimitives,
    TextSearch,
    LLMAccounting,
    EpisodeRules,
    EpisodeUpdates,
    SQLiteBase,
    Store,
):
    """A memstrata database in one SQLite file (``:memory:`` works for throwaway use)."""

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        ann_threshold: int | None = None,
        text_threshold: int | None = None,
        build_on_search: bool = True,
    ) -> None:
        """Namespaces get an approximate vector index (ann.py) from ``ann_threshold``
        vectors, a full-text index (fulltext.py) from ``text_threshold`` documents; with
        ``build_on_search`` a search starts their builds in the background, else only
        :meth:`build_indexes` writes them (sqlite_indexes.py)."""
        self.path = str(path)
        self.url = f"sqlite:///{self.path}"
        self.build_on_search = build_on_search
        self._lock = threading.RLock()
        self._init_search(self.path, ann_threshold)
        self._init_text(self.path, text_threshold)
        self._ns_ids: dict[str, int] = {}
        self._speakers: dict[int, list[str]] = {}
        self._seen_version = -1
        try:
            self._conn = sqlite3.connect(
                self.path,
                timeout=busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        try:
            self._conn.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
            self._set_up(deadline=time.monotonic() + busy_timeout_ms / 1000)
        except BaseException as exc:
            self._conn.close()
            if isinstance(exc, sqlite3.Error):
                raise translate(exc, self.path) from exc
            raise

    def _set_up(self, deadline: float) -> None:
        """Switch to WAL and migrate, retrying while another process does the same.

        Two processes opening a new file at once can get SQLITE_BUSY straight away, without
        the busy handler being consulted (switching the journal mode, or a reader upgrading
        while a writer waits). Every step here is idempotent, so the whole sequence is
        retried until the busy timeout has passed.
        """
        delay = 0.005
        while True:
            try:
                self._refuse_foreign()
                if self._conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.execute("PRAGMA foreign_keys=ON")
                # deleted rows and freed pages are overwritten with zeros, whatever the
                # build's default (docs/engine.md, "Deleted means gone")
                self._conn.execute("PRAGMA secure_delete=ON")
                self._migrate()
                return
            except (sqlite3.OperationalError, StoreLockedError) as exc:
                text = str(exc)
                if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                    raise
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                time.sleep(delay + random.random() * delay)
                delay = min(delay * 2, 0.2)

    # plumbing ---------------------------------------------------------------------------
    def _refuse_foreign(self) -> None:
        """Leave other applications' SQLite files exactly as they are."""
        tables = {
            r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if tables and "memstrata_meta" not in tables:
            raise StoreError(
                f"{self.path} is an SQLite database but not a memstrata one; choose another path"
            )

    def _migrate(self) -> None:
        conn = self._conn
        latest = _migrations()[-1][0]
        if self._read_version() == latest:
            return  # the common case needs no write lock
        with self._write():
            conn.execute(
                "CREATE TABLE IF NOT EXISTS memstrata_meta (key TEXT PRIMARY KEY, value TEXT)"
            )
            current = self._read_version()
            migrations = _migrations()
            if current > latest:
                raise StoreError(
                    f"{self.path} has schema version {current}, newer than this memstrata "
                    f"understands ({latest}); upgrade memstrata"
                )
            for version, sql in migrations:
                if version > current:
                    for statement in _split_sql(sql):
                        conn.execute(statement)
                    conn.execute(
                        "INSERT OR REPLACE INTO memstrata_meta VALUES ('schema_version', ?)",
                        (str(version),),
                    )

    def _read_version(self) -> int:
        exists = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='memstrata_meta'"
        ).fetchone()
        if not exists:
            return 0
        row = self._conn.execute(
            "SELECT value FROM memstrata_meta WHERE key='schema_version'"
        ).fetchone()
        return int(row[0]) if row else 0

    def schema_version(self) -> int:
        with self._lock:
            return self._read_version()

    # hooks of the shared rules ----------------------------------------------------------
    def _index_new(self, conn: sqlite3.Connection, ns_id: int, docs: list[tuple[int, str]]) -> None:
        conn.executemany(f"INSERT INTO {_fts(ns_id)}(rowid, body) VALUES (?, ?)", docs)

    def _after_add(self, namespace: str) -> None:
        self.mark_written(namespace)

    # namespaces -------------------------------------------------------------------------
    def delete_namespace(self, namespace: str) -> int:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return 0
            rows = conn.execute(
                "SELECT id, embed_hash FROM episodes WHERE namespace_id=?", (ns_id,)
            ).fetchall()
            own = [r[1] for r in rows if r[1] is not None]
            own += [
                r[0]
                for r in conn.execute(
                    "SELECT embed_hash FROM episode_versions WHERE namespace_id=? "
                    "AND embed_hash IS NOT NULL",
                    (ns_id,),
                )
            ]
            conn.execute(f"DROP TABLE IF EXISTS {_fts(ns_id)}")
            conn.execute("DELETE FROM namespaces WHERE id=?", (ns_id,))
            # its texts' vectors, and those made for its designs, unless held elsewhere
            self._forget(conn, list(dict.fromkeys(own)), [ns_id], (), everything=True)
            self._ns_ids.pop(namespace, None)
            self._speakers.pop(ns_id, None)
            self._drop_indexes(ns_id)
            return len(rows)

    # episodes ---------------------------------------------------------------------------
    def speakers(self, namespace: str) -> list[str]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            if ns_id not in self._speakers:
                rows = self._conn.execute(  # kept by triggers as episodes are written
                    "SELECT speaker FROM speaker_counts WHERE namespace_id=? "
                    "ORDER BY n DESC, speaker",
                    (ns_id,),
                ).fetchall()
                self._speakers[ns_id] = [r[0] for r in rows]
            return self._speakers[ns_id]

    def delete_episodes(self, namespace: str, external_ids: Sequence[str]) -> DeleteReport:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return DeleteReport(0, list(dict.fromkeys(external_ids)))
            found: dict[str, int] = {}
            removed: list[RemovedEpisode] = []
            for chunk in _chunks(list(external_ids), 500):
                marks = ",".join("?" * len(chunk))
                for ext, key, text, speaker, session, seq in conn.execute(
                    "SELECT external_id, id, text, speaker, session, seq FROM episodes "
                    f"WHERE namespace_id=? AND external_id IN ({marks})",
                    (ns_id, *chunk),
                ):
                    found[ext] = key
                    removed.append(
                        RemovedEpisode(
                            id=ext, text=text, speaker=speaker, session=session, seq=seq, key=key
                        )
                    )
            keys = list(found.values())
            missing = [i for i in dict.fromkeys(external_ids) if i not in found]
            if not keys:
                return DeleteReport(0, missing)
            affected: set[str] = set()
            for chunk in _chunks(keys, 500):
                marks = ",".join("?" * len(chunk))
                affected.update(
                    r[0]
                    for r in conn.execute(
                        f"SELECT DISTINCT record_id FROM provenance WHERE episode_id IN ({marks})",
                        tuple(chunk),
                    )
                )
                conn.execute(f"DELETE FROM {_fts(ns_id)} WHERE rowid IN ({marks})", tuple(chunk))
                conn.execute(f"DELETE FROM episodes WHERE id IN ({marks})", tuple(chunk))
            self._count_speakers(conn, ns_id, removed=[r.speaker for r in removed])
            self._follow_provenance(conn, ns_id, affected, removed)
            _rewrite_fts(conn, ns_id)
            self.mark_written(namespace)
        self._erase_files(ns_id)
        return DeleteReport(len(keys), missing)

    # accounting and stats ---------------------------------------------------------------
    def size_bytes(self) -> int:
        with self._lock:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if self.path == ":memory:":
                page_size = self._conn.execute("PRAGMA page_size").fetchone()[0]
                return int(page_size * self._conn.execute("PRAGMA page_count").fetchone()[0])
            total = Path(self.path).stat().st_size
            wal = Path(self.path + "-wal")
            return total + (wal.stat().st_size if wal.exists() else 0)

    def close(self) -> None:
        self.abandon_builds()  # before the interpreter can leave under them
        with self._lock:
            # The graph and full-text indexes map their files: let go of them now, not when
            # the object is collected, so that a file changed after close is never read.
            self._indexes.clear()
            self._texts.clear()
            self._conn.close()


# Every public method speaks StoreError, never a raw sqlite3 exception.
speak_store_errors(SQLiteStore, sqlite3.Error, translate)
