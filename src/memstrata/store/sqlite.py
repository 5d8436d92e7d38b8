"""Embedded store: one SQLite file in WAL mode, FTS5 for BM25, an in-process vector index.

Why an in-process exact index rather than an ANN library or ``sqlite-vec``: vectors are kept
once, in the ``embeddings`` table keyed by content hash (that table *is* the embedding
cache), and each namespace's matrix is loaded into memory on first search and then kept in
step incrementally. Exact search over 100,000 MiniLM vectors is one float32 matrix-vector
product (a few milliseconds on two cores, see ``memstrata bench scale``), it has perfect
recall, needs no index build and no extra bytes on disk. Other processes' writes are
noticed through ``PRAGMA data_version``.
"""

from __future__ import annotations

import functools
import json
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.errors import StoreError, StoreLockedError
from memstrata.llm.types import LLMCallRecord
from memstrata.models import (
    DERIVED_KINDS,
    Category,
    ConceptEdge,
    Derived,
    Entity,
    Episode,
    Fact,
    TreeNode,
)
from memstrata.store.base import (
    AddReport,
    EpisodeMeta,
    NamespaceStats,
    PreparedEpisode,
    ScoredKeys,
    SearchFilters,
    Store,
)
from memstrata.store.sqlite_builds import BuildBookkeeping

BUSY_TIMEOUT_MS = 30_000


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _ts(value: datetime | None) -> float | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def _migrations() -> list[tuple[int, str]]:
    folder = resources.files("memstrata.store").joinpath("migrations/sqlite")
    out = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            out.append((int(entry.name.split("_", 1)[0]), entry.read_text()))
    return sorted(out)


@dataclass
class _VectorIndex:
    """One namespace's episode vectors, kept in step with the table."""

    keys: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    matrix: NDArray[np.float32] = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    max_key: int = 0
    data_version: int = -1
    stale: bool = True


class SQLiteStore(BuildBookkeeping, Store):
    """A memstrata database in one SQLite file (``:memory:`` works for throwaway use)."""

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        self.path = str(path)
        self.url = f"sqlite:///{self.path}"
        self._lock = threading.RLock()
        self._indexes: dict[tuple[int, str], _VectorIndex] = {}
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
                raise _translate(exc, self.path) from exc
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

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction: all or nothing, serialised across processes."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _translate(exc, self.path) from exc
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise _translate(exc, self.path) from exc
                raise

    def _sync_caches(self) -> None:
        """Forget cached names and speakers when another connection has committed."""
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._seen_version:
            self._ns_ids.clear()
            self._speakers.clear()
            self._seen_version = version

    def _create_ns(self, namespace: str) -> int:
        """The namespace's id, creating it (inside the caller's write transaction)."""
        ns_id = self._ns_id(namespace, create=True)
        assert ns_id is not None
        return ns_id

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
                "INSERT INTO namespaces(name, created_at) VALUES (?, ?)", (namespace, _now())
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

    # namespaces -------------------------------------------------------------------------
    def namespaces(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT name FROM namespaces ORDER BY name")]

    def has_namespace(self, namespace: str) -> bool:
        with self._lock:
            return self._ns_id(namespace) is not None

    def delete_namespace(self, namespace: str) -> int:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return 0
            rows = conn.execute("SELECT id FROM episodes WHERE namespace_id=?", (ns_id,)).fetchall()
            conn.execute(f"DROP TABLE IF EXISTS {_fts(ns_id)}")
            conn.execute("DELETE FROM namespaces WHERE id=?", (ns_id,))
            self._ns_ids.pop(namespace, None)
            self._speakers.pop(ns_id, None)
            self._drop_indexes(ns_id)
            return len(rows)

    # episodes ---------------------------------------------------------------------------
    def add_episodes(self, namespace: str, episodes: Sequence[PreparedEpisode]) -> AddReport:
        report = AddReport()
        if not episodes:
            return report
        with self._write() as conn:
            ns_id = self._create_ns(namespace)
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM episodes WHERE namespace_id=?", (ns_id,)
            ).fetchone()[0]
            now = _now()
            for ep in episodes:
                seq += 1
                cur = conn.execute(
                    "INSERT OR IGNORE INTO episodes(namespace_id, external_id, text, speaker, "
                    "role, occurred_at, occurred_ts, session, seq, metadata, content_hash, "
                    "embed_hash, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        ns_id,
                        ep.external_id,
                        ep.text,
                        ep.speaker,
                        ep.role,
                        _iso(ep.occurred_at),
                        _ts(ep.occurred_at),
                        ep.session,
                        seq,
                        json.dumps(ep.metadata, ensure_ascii=False) if ep.metadata else None,
                        ep.content_hash,
                        ep.embed_hash,
                        now,
                    ),
                )
                if cur.rowcount == 0:
                    seq -= 1
                    report.existing.append(ep.external_id)
                    continue
                conn.execute(
                    f"INSERT INTO {_fts(ns_id)}(rowid, body) VALUES (?, ?)",
                    (cur.lastrowid, ep.index_text),
                )
                report.added.append(ep.external_id)
        self.mark_written(namespace)
        return report

    def existing_ids(self, namespace: str, external_ids: Sequence[str]) -> set[str]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None or not external_ids:
                return set()
            found: set[str] = set()
            for chunk in _chunks(list(external_ids), 500):
                marks = ",".join("?" * len(chunk))
                found.update(
                    r[0]
                    for r in self._conn.execute(
                        f"SELECT external_id FROM episodes WHERE namespace_id=? "
                        f"AND external_id IN ({marks})",
                        (ns_id, *chunk),
                    )
                )
            return found

    _EP_COLS = (
        "e.id, n.name, e.external_id, e.text, e.speaker, e.role, e.occurred_at, e.session, "
        "e.seq, e.metadata, e.created_at"
    )

    @staticmethod
    def _episode(row: Sequence[Any]) -> Episode:
        return Episode(
            key=row[0],
            namespace=row[1],
            id=row[2],
            text=row[3],
            speaker=row[4],
            role=row[5],
            occurred_at=row[6],
            session=row[7],
            seq=row[8],
            metadata=json.loads(row[9]) if row[9] else {},
            created_at=row[10],
        )

    def get_episodes(self, namespace: str, external_ids: Sequence[str]) -> list[Episode]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            rows = self._rows_in(
                f"SELECT {self._EP_COLS} FROM episodes e JOIN namespaces n "
                "ON n.id=e.namespace_id WHERE e.namespace_id=? AND e.external_id IN ({marks})",
                external_ids,
                ns_id,
            )
            out = {ep.id: ep for ep in map(self._episode, rows)}
            return [out[i] for i in external_ids if i in out]

    def episodes_by_key(self, keys: Sequence[int]) -> dict[int, Episode]:
        with self._lock:
            rows = self._rows_in(
                f"SELECT {self._EP_COLS} FROM episodes e JOIN namespaces n "
                "ON n.id=e.namespace_id WHERE e.id IN ({marks})",
                keys,
            )
            return {row[0]: self._episode(row) for row in rows}

    def episode_meta(self, keys: Sequence[int]) -> dict[int, EpisodeMeta]:
        with self._lock:
            rows = self._rows_in(
                "SELECT id, session, seq, speaker, occurred_ts FROM episodes WHERE id IN ({marks})",
                keys,
            )
            return {row[0]: EpisodeMeta(*row) for row in rows}

    def _rows_in(self, sql: str, values: Sequence[Any], *lead: Any) -> list[Any]:
        """Run ``sql`` (with an ``IN ({marks})`` slot) over ``values`` in chunks SQLite takes."""
        rows: list[Any] = []
        for chunk in _chunks(list(values), 500):
            marks = ",".join("?" * len(chunk))
            rows.extend(self._conn.execute(sql.format(marks=marks), (*lead, *chunk)))
        return rows

    def iter_episodes(self, namespace: str, after_key: int = 0, limit: int = 1000) -> list[Episode]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            rows = self._conn.execute(
                f"SELECT {self._EP_COLS} FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
                "WHERE e.namespace_id=? AND e.id>? ORDER BY e.id LIMIT ?",
                (ns_id, after_key, limit),
            ).fetchall()
            return [self._episode(r) for r in rows]

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

    def speakers(self, namespace: str) -> list[str]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            if ns_id not in self._speakers:
                rows = self._conn.execute(
                    "SELECT speaker FROM episodes WHERE namespace_id=? AND speaker IS NOT NULL "
                    "GROUP BY speaker ORDER BY COUNT(*) DESC",
                    (ns_id,),
                ).fetchall()
                self._speakers[ns_id] = [r[0] for r in rows]
            return self._speakers[ns_id]

    def delete_episodes(self, namespace: str, external_ids: Sequence[str]) -> int:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return 0
            keys: list[int] = []
            for chunk in _chunks(list(external_ids), 500):
                marks = ",".join("?" * len(chunk))
                keys.extend(
                    r[0]
                    for r in conn.execute(
                        "SELECT id FROM episodes WHERE namespace_id=? "
                        f"AND external_id IN ({marks})",
                        (ns_id, *chunk),
                    )
                )
            if not keys:
                return 0
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
            # Records whose every source is gone go with them; others just lose those spans.
            for rec_id in affected:
                left = conn.execute(
                    "SELECT 1 FROM provenance WHERE record_id=? LIMIT 1", (rec_id,)
                ).fetchone()
                if left is None:
                    conn.execute("DELETE FROM records WHERE id=?", (rec_id,))
                else:
                    self._resync_sources(conn, rec_id)
            self.mark_written(namespace)
            return len(keys)

    def _resync_sources(self, conn: sqlite3.Connection, rec_id: str) -> None:
        row = conn.execute("SELECT data FROM records WHERE id=?", (rec_id,)).fetchone()
        spans = conn.execute(
            'SELECT e.external_id, p.start, p."end" FROM provenance p JOIN episodes e '
            "ON e.id=p.episode_id WHERE p.record_id=?",
            (rec_id,),
        ).fetchall()
        data = json.loads(row[0])
        data["sources"] = [{"episode": s[0], "start": s[1], "end": s[2]} for s in spans]
        conn.execute(
            "UPDATE records SET data=?, updated_at=? WHERE id=?", (json.dumps(data), _now(), rec_id)
        )

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

    def mark_written(self, namespace: str) -> None:
        """Tell the caches that this connection changed the episodes of ``namespace``."""
        ns_id = self._ns_ids.get(namespace)
        self._speakers.pop(ns_id or -1, None)
        for key in [k for k in self._indexes if k[0] == ns_id]:
            self._indexes[key].stale = True

    # derived records --------------------------------------------------------------------
    def put_records(self, namespace: str, records: Sequence[Derived]) -> None:
        self.write_records(namespace, records)

    def write_records(
        self,
        namespace: str,
        put: Sequence[Derived],
        delete: Sequence[str] = (),
        built: tuple[str, Sequence[int]] | None = None,
    ) -> None:
        if not put and not delete and not built:
            return
        with self._write() as conn:
            conn.execute("PRAGMA defer_foreign_keys=ON")
            ns_id = self._create_ns(namespace)
            for chunk in _chunks(list(delete), 500):
                marks = ",".join("?" * len(chunk))
                conn.execute(
                    f"DELETE FROM records WHERE namespace_id=? AND id IN ({marks})",
                    (ns_id, *chunk),
                )
            if built:
                self._mark_done(conn, ns_id, *built)
            self._put_records(conn, namespace, put)

    def _put_records(
        self, conn: sqlite3.Connection, namespace: str, records: Sequence[Derived]
    ) -> None:
        if records:
            # Links may name records later in the same batch: checked once, at the end.
            ns_id = self._create_ns(namespace)
            now = _now()
            for rec in records:
                if rec.namespace != namespace:
                    raise StoreError(
                        f"record {rec.id} belongs to namespace {rec.namespace!r}, not {namespace!r}"
                    )
                data = rec.model_dump_json()
                created = _iso(rec.created_at) or now
                conn.execute(
                    "INSERT INTO records(id, namespace_id, kind, data, created_at, updated_at) "
                    "VALUES (?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET data=excluded.data, "
                    "updated_at=excluded.updated_at",
                    (rec.id, ns_id, rec.kind, data, created, now),
                )
                self._put_kind_columns(conn, rec)
                conn.execute("DELETE FROM provenance WHERE record_id=?", (rec.id,))
                for span in rec.sources:
                    row = conn.execute(
                        "SELECT id FROM episodes WHERE namespace_id=? AND external_id=?",
                        (ns_id, span.episode),
                    ).fetchone()
                    if row is None:
                        raise StoreError(
                            f"record {rec.id} cites episode {span.episode!r}, "
                            f"which is not in namespace {namespace!r}"
                        )
                    conn.execute(
                        "INSERT OR IGNORE INTO provenance VALUES (?,?,?,?)",
                        (rec.id, row[0], span.start, span.end),
                    )
            if conn.execute("PRAGMA foreign_key_check(category_links)").fetchone():
                missing = sorted(
                    r[0]
                    for r in conn.execute(
                        "SELECT DISTINCT child_id FROM category_links WHERE child_id NOT IN "
                        "(SELECT id FROM records) UNION SELECT DISTINCT parent_id FROM "
                        "category_links WHERE parent_id NOT IN (SELECT id FROM records)"
                    )
                )
                raise StoreError(
                    f"category links name records that do not exist: {missing[:5]}; write "
                    "children before or together with their categories"
                )

    def records_stamp(self, namespace: str) -> tuple[int, str]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return (0, "")
            row = self._conn.execute(
                "SELECT COUNT(*), COALESCE(MAX(updated_at), '') FROM records WHERE namespace_id=?",
                (ns_id,),
            ).fetchone()
            return (int(row[0]), str(row[1]))

    @staticmethod
    def _put_kind_columns(conn: sqlite3.Connection, rec: Derived) -> None:
        if isinstance(rec, Entity):
            conn.execute("INSERT OR REPLACE INTO entities VALUES (?,?)", (rec.id, rec.name))
        elif isinstance(rec, Fact):
            conn.execute(
                "INSERT OR REPLACE INTO facts VALUES (?,?,?,?,?)",
                (rec.id, rec.subject_id, rec.object_id, _iso(rec.valid_at), _iso(rec.invalid_at)),
            )
        elif isinstance(rec, Category):
            conn.execute("INSERT OR REPLACE INTO categories VALUES (?,?)", (rec.id, rec.layer))
            conn.execute("DELETE FROM category_links WHERE parent_id=?", (rec.id,))
            conn.executemany(
                "INSERT OR IGNORE INTO category_links VALUES (?,?)",
                [(rec.id, child) for child in rec.child_ids],
            )
        elif isinstance(rec, TreeNode):
            conn.execute(
                "INSERT OR REPLACE INTO tree_nodes VALUES (?,?,?)",
                (rec.id, rec.parent_id, rec.depth),
            )
        elif isinstance(rec, ConceptEdge):
            conn.execute(
                "INSERT OR REPLACE INTO concept_edges VALUES (?,?,?)",
                (rec.id, rec.source_id, rec.target_id),
            )

    def get_records(
        self, namespace: str, kind: str, ids: Sequence[str] | None = None
    ) -> list[Derived]:
        model = DERIVED_KINDS.get(kind)
        if model is None:
            raise StoreError(f"unknown record kind {kind!r}; known: {sorted(DERIVED_KINDS)}")
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            if ids is None:
                rows = self._conn.execute(
                    "SELECT data FROM records WHERE namespace_id=? AND kind=? ORDER BY rowid",
                    (ns_id, kind),
                ).fetchall()
            else:
                rows = []
                for chunk in _chunks(list(ids), 500):
                    marks = ",".join("?" * len(chunk))
                    rows.extend(
                        self._conn.execute(
                            f"SELECT data FROM records WHERE namespace_id=? AND kind=? "
                            f"AND id IN ({marks})",
                            (ns_id, kind, *chunk),
                        ).fetchall()
                    )
            return [model.model_validate_json(r[0]) for r in rows]

    # accounting and stats ---------------------------------------------------------------
    def record_llm_call(self, record: LLMCallRecord) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO llm_calls(namespace, stage, backend, model, prompt_tokens, "
                "completion_tokens, latency_ms, cached, ok, error, attempts, request_hash, "
                "created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    record.namespace,
                    record.stage,
                    record.backend,
                    record.model,
                    record.prompt_tokens,
                    record.completion_tokens,
                    record.latency_ms,
                    int(record.cached),
                    int(record.ok),
                    record.error,
                    record.attempts,
                    record.request_hash,
                    record.created_at.isoformat(),
                ),
            )

    def llm_usage(self, namespace: str | None = None) -> dict[str, dict[str, Any]]:
        where, args = ("WHERE namespace=?", (namespace,)) if namespace else ("", ())
        with self._lock:
            rows = self._conn.execute(
                "SELECT stage, COUNT(*), SUM(1-ok), SUM(cached), SUM(prompt_tokens), "
                f"SUM(completion_tokens), SUM(latency_ms) FROM llm_calls {where} GROUP BY stage",
                args,
            ).fetchall()
        return {
            r[0]: {
                "calls": r[1],
                "failures": r[2],
                "cached": r[3],
                "prompt_tokens": r[4],
                "completion_tokens": r[5],
                "latency_ms": round(r[6], 1),
            }
            for r in rows
        }

    def stats(self, namespace: str | None = None) -> list[NamespaceStats]:
        with self._lock:
            names = [namespace] if namespace else self.namespaces()
            out = []
            for name in names:
                ns_id = self._ns_id(name)
                if ns_id is None:
                    continue
                episodes, embedded = self._conn.execute(
                    "SELECT COUNT(*), COUNT(embed_hash) FROM episodes WHERE namespace_id=?",
                    (ns_id,),
                ).fetchone()
                records = dict(
                    self._conn.execute(
                        "SELECT kind, COUNT(*) FROM records WHERE namespace_id=? GROUP BY kind",
                        (ns_id,),
                    ).fetchall()
                )
                out.append(
                    NamespaceStats(
                        namespace=name,
                        episodes=episodes,
                        records=records,
                        embedded=embedded,
                        builds=self._build_counts(ns_id),
                    )
                )
            return out

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
        with self._lock:
            self._conn.close()


def _fts(ns_id: int) -> str:
    """Name of a namespace's full-text table (an integer id, so safe to splice into SQL)."""
    return f"fts_{int(ns_id)}"


def _translate(exc: sqlite3.Error, path: str) -> StoreError:
    """SQLite's errors in words a user can act on."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        return StoreLockedError(
            f"{path} stayed locked by another process for longer than the busy timeout; "
            "retry when it is done, or raise the timeout"
        )
    if isinstance(exc, sqlite3.ProgrammingError) and "closed" in text:
        return StoreError(f"{path}: the store has been closed; open it again")
    if isinstance(exc, sqlite3.IntegrityError):
        return StoreError(f"{path}: write refused by a consistency rule ({text})")
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return StoreError(
            f"{path} is not a memstrata database or is corrupt ({text}); "
            "restore it from a backup or choose another path"
        )
    return StoreError(f"{path}: {text}")


def _guard(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(self: SQLiteStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise _translate(exc, self.path) from exc

    return wrapper


# Every public method speaks StoreError, never a raw sqlite3 exception.
for _name in [n for n in vars(Store) if not n.startswith("_")] + ["schema_version"]:
    setattr(SQLiteStore, _name, _guard(getattr(SQLiteStore, _name)))


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _split_sql(script: str) -> list[str]:
    """Statements of a migration file (no semicolons inside our literals)."""
    lines = [ln for ln in script.splitlines() if not ln.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
