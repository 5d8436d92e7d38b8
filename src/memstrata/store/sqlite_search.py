"""The SQLite store's embedding cache and retrieval primitives: BM25 and dense search.

Why an in-process exact index rather than an ANN library or ``sqlite-vec``: vectors are kept
once, in the ``embeddings`` table keyed by content hash (that table *is* the embedding
cache), and each namespace's matrix is loaded into memory on first search and then kept in
step incrementally. Exact search over 100,000 MiniLM vectors is one float32 matrix-vector
product (a few milliseconds on two cores, see ``memstrata bench scale``), it has perfect
recall, needs no index build and no extra bytes on disk. Other processes' writes are
noticed through ``PRAGMA data_version``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from memstrata.models import Episode
from memstrata.store.base import ScoredKeys, SearchFilters
from memstrata.store.sqlite_common import _chunks, _fts, _ts


@dataclass
class _VectorIndex:
    """One namespace's episode vectors, kept in step with the table."""

    keys: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    matrix: NDArray[np.float32] = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    max_key: int = 0
    data_version: int = -1
    stale: bool = True
    revision: int = -1  # the namespace's largest episode version id when last in step


class SearchPrimitives:
    """Mixin of :class:`~memstrata.store.sqlite.SQLiteStore`."""

    if TYPE_CHECKING:
        _conn: sqlite3.Connection
        _lock: threading.RLock
        _indexes: dict[tuple[int, str], _VectorIndex]
        _ns_ids: dict[str, int]
        _speakers: dict[int, list[str]]

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...
        def _ns_id(self, namespace: str, create: bool = False) -> int | None: ...
        def _versions_stamp(self, ns_id: int) -> int: ...

        _EP_COLS: str

        @staticmethod
        def _episode(row: Sequence[Any]) -> Episode: ...

    # embeddings -------------------------------------------------------------------------
    def cached_embeddings(
        self, model: str, hashes: Sequence[bytes]
    ) -> dict[bytes, NDArray[np.float32]]:
        out: dict[bytes, NDArray[np.float32]] = {}
        with self._lock:
            for chunk in _chunks(list(set(hashes)), 500):
                marks = ",".join("?" * len(chunk))
                for h, blob in self._conn.execute(
                    f"SELECT hash, vec FROM embeddings WHERE model=? AND hash IN ({marks})",
                    (model, *chunk),
                ):
                    out[h] = np.frombuffer(blob, dtype=np.float16).astype(np.float32)
        return out

    def put_embeddings(
        self, model: str, items: Sequence[tuple[bytes, NDArray[np.float32]]]
    ) -> None:
        if not items:
            return
        # float16 halves the bytes; cosine agreement with float32 stays above 0.9999.
        rows = [(model, h, np.asarray(v, dtype=np.float16).tobytes()) for h, v in items]
        with self._write() as conn:
            conn.executemany("INSERT OR IGNORE INTO embeddings VALUES (?,?,?)", rows)

    # retrieval primitives ---------------------------------------------------------------
    def _filter_sql(self, filters: SearchFilters | None) -> tuple[str, list[Any]]:
        if filters is None or filters.is_empty():
            return "", []
        clauses: list[str] = []
        args: list[Any] = []
        if filters.speakers:
            clauses.append(f"e.speaker IN ({','.join('?' * len(filters.speakers))})")
            args.extend(filters.speakers)
        if filters.sessions:
            clauses.append(f"e.session IN ({','.join('?' * len(filters.sessions))})")
            args.extend(filters.sessions)
        if filters.since:
            clauses.append("e.occurred_ts >= ?")
            args.append(_ts(filters.since))
        if filters.until:
            clauses.append("e.occurred_ts <= ?")
            args.append(_ts(filters.until))
        return " AND " + " AND ".join(clauses), args

    def bm25_episodes(
        self, namespace: str, terms: Sequence[str], limit: int, filters: SearchFilters | None = None
    ) -> ScoredKeys:
        terms = [t for t in terms if t]
        if not terms or limit <= 0:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        where, args = self._filter_sql(filters)
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            fts = _fts(ns_id)
            if where:
                sql = (
                    f"SELECT f.rowid, bm25({fts}) AS s FROM {fts} f JOIN episodes e "
                    f"ON e.id=f.rowid WHERE {fts} MATCH ?{where} ORDER BY s LIMIT ?"
                )
            else:
                sql = (
                    f"SELECT rowid, bm25({fts}) AS s FROM {fts} WHERE {fts} MATCH ? "
                    "ORDER BY s LIMIT ?"
                )
            rows = self._conn.execute(sql, (match, *args, limit)).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def dense_episodes(
        self,
        namespace: str,
        model: str,
        queries: NDArray[np.float32],
        limit: int,
        filters: SearchFilters | None = None,
    ) -> list[ScoredKeys]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None or limit <= 0:
                return [[] for _ in range(len(queries))]
            index = self._fresh_index(ns_id, model)
            keys, matrix = index.keys, index.matrix
            allowed: NDArray[np.bool_] | None = None
            if filters is not None and not filters.is_empty() and len(keys):
                where, args = self._filter_sql(filters)
                ok = np.fromiter(
                    (
                        r[0]
                        for r in self._conn.execute(
                            f"SELECT e.id FROM episodes e WHERE e.namespace_id=?{where}",
                            (ns_id, *args),
                        )
                    ),
                    dtype=np.int64,
                )
                allowed = np.isin(keys, ok)
        if not len(keys):
            return [[] for _ in range(len(queries))]
        scores = np.asarray(queries, dtype=np.float32) @ matrix.T
        if allowed is not None:
            scores[:, ~allowed] = -np.inf
        n = min(limit, scores.shape[1])
        out: list[ScoredKeys] = []
        for row in scores:
            top = np.argpartition(-row, n - 1)[:n] if n < len(row) else np.arange(len(row))
            top = top[np.argsort(-row[top], kind="stable")]
            out.append([(int(keys[i]), float(row[i])) for i in top if np.isfinite(row[i])])
        return out

    def _fresh_index(self, ns_id: int, model: str) -> _VectorIndex:
        """Bring the in-memory matrix in step with the table, loading only what is new."""
        index = self._indexes.setdefault((ns_id, model), _VectorIndex())
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if not index.stale and version == index.data_version:
            return index
        revision = self._versions_stamp(ns_id)
        if revision != index.revision:
            # An update replaced vectors in place (same keys, same count): load afresh.
            index.keys = np.zeros(0, dtype=np.int64)
            index.matrix = np.zeros((0, 0), np.float32)
            index.max_key = 0
            index.revision = revision
        count, max_key = self._conn.execute(
            "SELECT COUNT(*), COALESCE(MAX(e.id), 0) FROM episodes e JOIN embeddings v "
            "ON v.model=? AND v.hash=e.embed_hash WHERE e.namespace_id=?",
            (model, ns_id),
        ).fetchone()
        new_rows = self._conn.execute(
            "SELECT e.id, v.vec FROM episodes e JOIN embeddings v ON v.model=? "
            "AND v.hash=e.embed_hash WHERE e.namespace_id=? AND e.id>? ORDER BY e.id",
            (model, ns_id, index.max_key),
        ).fetchall()
        if len(index.keys) + len(new_rows) != count:
            index.keys = np.zeros(0, dtype=np.int64)
            index.matrix = np.zeros((0, 0), np.float32)
            index.max_key = 0
            new_rows = self._conn.execute(
                "SELECT e.id, v.vec FROM episodes e JOIN embeddings v ON v.model=? "
                "AND v.hash=e.embed_hash WHERE e.namespace_id=? ORDER BY e.id",
                (model, ns_id),
            ).fetchall()
        if new_rows:
            add_keys = np.fromiter((r[0] for r in new_rows), dtype=np.int64, count=len(new_rows))
            half = np.frombuffer(b"".join(r[1] for r in new_rows), dtype=np.float16)
            add_mat = half.reshape(len(new_rows), -1).astype(np.float32)
            if len(index.keys):
                index.keys = np.concatenate([index.keys, add_keys])
                index.matrix = np.vstack([index.matrix, add_mat])
            else:
                index.keys, index.matrix = add_keys, add_mat
            index.max_key = int(max_key)
        index.data_version = version
        index.stale = False
        return index

    def _drop_indexes(self, ns_id: int) -> None:
        for key in [k for k in self._indexes if k[0] == ns_id]:
            del self._indexes[key]

    # conversation positions ---------------------------------------------------------------
    def session_neighbours(self, keys: Sequence[int], window: int) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        if window <= 0:
            return {k: [] for k in keys}
        with self._lock:
            for key in keys:
                row = self._conn.execute(
                    "SELECT namespace_id, session, seq FROM episodes WHERE id=?", (key,)
                ).fetchone()
                if row is None:
                    continue
                ns_id, session, seq = row
                if session is None:
                    out[key] = []
                    continue
                before = self._conn.execute(
                    "SELECT id FROM episodes WHERE namespace_id=? AND session=? AND seq<? "
                    "ORDER BY seq DESC LIMIT ?",
                    (ns_id, session, seq, window),
                ).fetchall()
                after = self._conn.execute(
                    "SELECT id FROM episodes WHERE namespace_id=? AND session=? AND seq>? "
                    "ORDER BY seq LIMIT ?",
                    (ns_id, session, seq, window),
                ).fetchall()
                out[key] = [r[0] for r in reversed(before)] + [r[0] for r in after]
        return out

    def session_after(self, namespace: str, session: str, seq: int, limit: int) -> list[Episode]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None or limit <= 0:
                return []
            rows = self._conn.execute(
                f"SELECT {self._EP_COLS} FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
                "WHERE e.namespace_id=? AND e.session=? AND e.seq>? ORDER BY e.seq LIMIT ?",
                (ns_id, session, seq, limit),
            ).fetchall()
            return [self._episode(r) for r in rows]

    def mark_written(self, namespace: str) -> None:
        """Tell the caches that this connection changed the episodes of ``namespace``."""
        ns_id = self._ns_ids.get(namespace)
        self._speakers.pop(ns_id or -1, None)
        for key in [k for k in self._indexes if k[0] == ns_id]:
            self._indexes[key].stale = True
