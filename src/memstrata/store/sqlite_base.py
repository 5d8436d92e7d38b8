"""The host class of the SQLite store's parts: its connection, transactions and
namespace lookups, and the methods one part calls on another (see ``sql/host.py``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from memstrata.store.base import WOULD_WAIT, WouldWait
from memstrata.store.names import check_namespace
from memstrata.store.sql.common import now
from memstrata.store.sql.dialect import SQLITE
from memstrata.store.sql.host import SQLCore
from memstrata.store.sqlite_common import _fts, translate

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from memstrata.store.sqlite_search import _VectorIndex
    from memstrata.store.sqlite_text import _TextState

T = TypeVar("T")


class SQLiteBase(SQLCore):
    """What every part of :class:`~memstrata.store.sqlite.SQLiteStore` may use."""

    dialect = SQLITE
    path: str
    build_on_search: bool
    _conn: sqlite3.Connection
    _ns_ids: dict[str, int]
    _speakers: dict[int, list[str]]
    _seen_version: int
    _indexes: dict[tuple[int, str], _VectorIndex]
    _texts: dict[int, _TextState]
    _ann_threshold: int
    _text_threshold: int

    @property
    def _where(self) -> str:
        return self.path

    @property
    def _shown(self) -> str:
        return self.path

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction: all or nothing, serialised across processes."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from exc
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise translate(exc, self.path) from exc
                raise

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                yield self._conn
            finally:
                self._conn.execute("COMMIT")

    def _sync_caches(self) -> None:
        """Forget cached names and speakers when another connection has committed."""
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._seen_version:
            self._ns_ids.clear()
            self._speakers.clear()
            self._seen_version = version

    def _create_ns(self, conn: Any, namespace: str) -> int:
        """The namespace's id, creating it (inside the caller's write transaction); a name
        :func:`check_namespace` refuses is never written."""
        ns_id = self._ns_id(check_namespace(namespace), create=True)
        assert ns_id is not None
        return ns_id

    def _lock_ns(self, conn: Any, namespace: str) -> int | None:
        return self._ns_id(namespace)

    def _ns_id(self, namespace: str, create: bool = False) -> int | None:
        self._sync_caches()
        cached = self._ns_ids.get(namespace)
        if cached is not None:
            return cached
        row = self._conn.execute("SELECT id FROM namespaces WHERE name=?", (namespace,)).fetchone()
        if row is None:
            if not create:
                return None
            cur = self._conn.execute(
                "INSERT INTO namespaces(name, created_at) VALUES (?, ?)", (namespace, now())
            )
            ns_id = int(cur.lastrowid or 0)
            self._conn.execute(
                f"CREATE VIRTUAL TABLE {_fts(ns_id)} USING fts5(body, "
                "tokenize='porter unicode61 remove_diacritics 2')"
            )
        else:
            ns_id = int(row[0])
        self._ns_ids[namespace] = ns_id
        return ns_id

    def read_at_once(self, read: Callable[[], T]) -> T | WouldWait:
        """At once while no other thread holds the connection: a read in WAL mode does
        not wait for writers of other processes."""
        if not self._lock.acquire(blocking=False):
            return WOULD_WAIT
        try:
            return read()
        finally:
            self._lock.release()

    # what the parts call on each other --------------------------------------------------
    def mark_written(self, namespace: str) -> None:
        raise NotImplementedError

    def _erase_files(self, ns_id: int) -> None:
        raise NotImplementedError

    def _erase_graph(self, ns_id: int) -> None:
        raise NotImplementedError

    def _erase_text(self, ns_id: int) -> None:
        raise NotImplementedError

    def _versions_stamp(self, ns_id: int) -> int:
        raise NotImplementedError

    def _drop_text(self, ns_id: int) -> None:
        raise NotImplementedError

    def _text_written(self, ns_id: int | None) -> None:
        raise NotImplementedError

    def _live_keys(self, ns_id: int, keys: NDArray[np.int64]) -> NDArray[np.int64]:
        raise NotImplementedError

    def _fresh_index(self, ns_id: int, model: str) -> _VectorIndex:
        raise NotImplementedError

    def _graph_due(self, ns_id: int, model: str, index: _VectorIndex) -> bool:
        raise NotImplementedError

    def _start_graph(self, ns_id: int, model: str, index: _VectorIndex) -> None:
        raise NotImplementedError

    def _fresh_text(self, ns_id: int) -> _TextState:
        raise NotImplementedError

    def _text_due(self, ns_id: int, state: _TextState) -> bool:
        raise NotImplementedError

    def _start_text(self, ns_id: int, state: _TextState) -> None:
        raise NotImplementedError

    def _drop_indexes(self, ns_id: int) -> None:
        raise NotImplementedError
