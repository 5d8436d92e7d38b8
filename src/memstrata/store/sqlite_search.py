"""The SQLite store's embedding cache and dense search (BM25 is ``sqlite_text``).

Vectors are kept once, in the ``embeddings`` table keyed by content hash (that table *is*
the embedding cache). Each namespace's matrix is loaded into memory on first search and
kept in step incrementally; other processes' writes are noticed through ``PRAGMA
data_version``. Below ``ann.ANN_THRESHOLD`` vectors, search is exact: one float32
matrix product, perfect recall, no build, no extra bytes. From there on a namespace also
gets an approximate graph in a file beside the database (``store/ann.py``), built in the
background while exact search goes on; the matrix then holds only the delta the graph
does not cover, and every hit is checked against the episodes table, so deletes and
updates stay exact.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.models import Episode
from memstrata.store import ann
from memstrata.store.ann import AnnFileError, AnnIndex
from memstrata.store.background import Background, BuildControl
from memstrata.store.base import ScoredKeys, SearchFilters
from memstrata.store.sql.common import EP_COLS, episode
from memstrata.store.sql.common import chunks as _chunks
from memstrata.store.sqlite_base import SQLiteBase

logger = logging.getLogger(__name__)

# With a graph, the delta searched exactly is folded into a new graph file once it holds
# this many vectors or a twentieth of the graph, whichever is more.
DELTA_FOLD_MIN = 2_000


@dataclass
class _VectorIndex:
    """One namespace's episode vectors, kept in step with the table.

    Without ``ann``, ``keys``/``matrix`` hold every vector (exact search). With it they
    hold the delta: vectors of episodes added after the graph was written, and the new
    vectors of the ones updated since (``dirty``: keys whose vector in the graph is old).
    """

    keys: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    matrix: NDArray[np.float32] = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    max_key: int = 0
    data_version: int = -1
    stale: bool = True
    revision: int = -1  # the namespace's largest episode version id when last in step
    ann: AnnIndex | None = None
    dirty: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    looked_for_file: bool = False
    job: Background[AnnIndex] = field(default_factory=Background)

    def reset(self) -> None:
        self.keys = np.zeros(0, dtype=np.int64)
        self.matrix = np.zeros((0, 0), np.float32)
        self.max_key = 0
        self.dirty = np.zeros(0, dtype=np.int64)


class SearchPrimitives(SQLiteBase):
    """Part of :class:`~memstrata.store.sqlite.SQLiteStore`."""

    def _init_search(self, path: str, ann_threshold: int | None) -> None:
        self._indexes: dict[tuple[int, str], _VectorIndex] = {}
        in_memory = path in ("", ":memory:") or path.startswith("file:")
        self._ann_folder = None if in_memory else ann.folder_for(path)
        self._ann_threshold = max(1, ann_threshold or ann.ANN_THRESHOLD)
        self.ann_builds = 0  # graph builds this connection started

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
        self,
        model: str,
        items: Sequence[tuple[bytes, NDArray[np.float32]]],
        words: Mapping[bytes, Collection[int]] | None = None,
        namespace: str | None = None,
    ) -> None:
        if not items:
            return
        # float16 halves the bytes; cosine agreement with float32 stays above 0.9999.
        rows = [(model, h, np.asarray(v, dtype=np.float16).tobytes()) for h, v in items]
        with self._write() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO embeddings(model, hash, vec) VALUES (?,?,?)", rows
            )
            if words:
                ns_id = (self._ns_id(namespace) if namespace is not None else None) or 0
                conn.executemany(
                    "INSERT OR IGNORE INTO embedding_terms(namespace_id, term, hash) "
                    "VALUES (?,?,?)",
                    [(ns_id, t, h) for h, keys in words.items() for t in keys],
                )

    # retrieval primitives ---------------------------------------------------------------
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
            allowed: NDArray[np.int64] | None = None
            if filters is not None and not filters.is_empty():
                where, args = self._filter_sql(filters)
                allowed = np.fromiter(
                    (
                        r[0]
                        for r in self._conn.execute(
                            f"SELECT e.id FROM episodes e WHERE e.namespace_id=?{where}",
                            (ns_id, *args),
                        )
                    ),
                    dtype=np.int64,
                )
            if index.ann is not None:
                return self._dense_with_graph(ns_id, index, queries, limit, allowed)
        return _top_exact(index.keys, index.matrix, queries, limit, allowed)

    def _dense_with_graph(
        self,
        ns_id: int,
        index: _VectorIndex,
        queries: NDArray[np.float32],
        limit: int,
        allowed: NDArray[np.int64] | None,
    ) -> list[ScoredKeys]:
        """Graph candidates (rescored with their stored vectors) and the delta searched
        exactly, merged; every hit checked against the episodes table."""
        ann = index.ann
        assert ann is not None
        queries = np.asarray(queries, dtype=np.float32)
        narrow = allowed is not None and len(allowed) <= max(4096, len(ann) // 16)
        out: list[ScoredKeys] = []
        for q in queries:
            delta = _top_exact(index.keys, index.matrix, q[None, :], limit, allowed)[0]
            if narrow:
                # A filter that leaves few episodes: score them all, the graph holds them.
                assert allowed is not None
                keys = allowed[(allowed <= ann.manifest.max_key) & ~np.isin(allowed, index.dirty)]
                graph, vectors = ann.vectors_of(keys)
                found = _scored(graph, vectors @ q, limit)
                out.append(_merge(found, delta, limit))
                continue
            fetch = 2 * limit + 8
            while True:
                keys = ann.search(q[None, :], fetch)[0]
                keys = keys[~np.isin(keys, index.dirty)]
                if allowed is not None:
                    keys = keys[np.isin(keys, allowed)]
                keys = self._live_keys(ns_id, keys)
                if len(keys) >= limit or fetch >= len(ann):
                    break
                fetch *= 4
            held, vectors = ann.vectors_of(keys)  # every key the graph returned it holds
            found = _scored(held, vectors @ q, limit)
            # the graph's keys were checked above; the delta may hold deleted episodes
            live = set(self._live_keys(ns_id, np.array([k for k, _ in delta], np.int64)).tolist())
            out.append(_merge(found, [(k, v) for k, v in delta if k in live], limit))
        return out

    def _live_keys(self, ns_id: int, keys: NDArray[np.int64]) -> NDArray[np.int64]:
        """``keys`` that are still episodes of the namespace, in the order given."""
        if not len(keys):
            return keys
        found: set[int] = set()
        for chunk in _chunks([int(k) for k in keys], 500):
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0]
                for r in self._conn.execute(
                    # by primary key: with namespace_id in the WHERE clause the planner
                    # walks the namespace's index instead (a millisecond per query)
                    f"SELECT id, namespace_id FROM episodes WHERE id IN ({marks})",
                    chunk,
                )
                if r[1] == ns_id
            )
        return np.array([k for k in keys.tolist() if k in found], dtype=np.int64)

    def _fresh_index(self, ns_id: int, model: str) -> _VectorIndex:
        """Bring the in-memory vectors in step with the table, loading only what is new."""
        index = self._indexes.setdefault((ns_id, model), _VectorIndex())
        self._adopt_built(index)
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if not index.stale and version == index.data_version:
            return index
        if index.ann is None and not index.looked_for_file and self._ann_folder is not None:
            index.looked_for_file = True
            self._open_graph(ns_id, model, index)
        if index.ann is not None:
            self._refresh_delta(ns_id, model, index)
        else:
            self._refresh_exact(ns_id, model, index)
        index.data_version = version
        index.stale = False
        self._maybe_build_graph(ns_id, model, index)
        return index

    def _refresh_exact(self, ns_id: int, model: str, index: _VectorIndex) -> None:
        revision = self._versions_stamp(ns_id)
        if revision != index.revision:
            # An update replaced vectors in place (same keys, same count): load afresh.
            index.reset()
            index.revision = revision
        count, max_key = self._conn.execute(
            "SELECT COUNT(*), COALESCE(MAX(e.id), 0) FROM episodes e JOIN embeddings v "
            "ON v.model=? AND v.hash=e.embed_hash WHERE e.namespace_id=?",
            (model, ns_id),
        ).fetchone()
        new_rows = self._vector_rows(ns_id, model, "e.id>?", (index.max_key,))
        if len(index.keys) + len(new_rows) != count:
            index.reset()
            new_rows = self._vector_rows(ns_id, model, "1", ())
        _append(index, new_rows)
        index.max_key = max(index.max_key, int(max_key))

    def _refresh_delta(self, ns_id: int, model: str, index: _VectorIndex) -> None:
        """With a graph: the vectors it lacks (newer keys) or holds outdated (updated)."""
        ann = index.ann
        assert ann is not None
        covered = ann.manifest.max_key
        revision = self._versions_stamp(ns_id)
        if revision != index.revision:
            changed = [
                r[0]
                for r in self._conn.execute(
                    "SELECT DISTINCT episode_id FROM episode_versions "
                    "WHERE namespace_id=? AND id>? AND episode_id<=?",
                    (ns_id, ann.manifest.revision, covered),
                )
            ]
            index.reset()
            index.revision = revision
            index.dirty = np.array(sorted(changed), dtype=np.int64)
            rows = []
            for chunk in _chunks(changed, 500):
                rows += self._vector_rows(
                    ns_id, model, f"e.id IN ({','.join('?' * len(chunk))})", chunk
                )
            index.max_key = covered
            _append(index, rows)
        rows = self._vector_rows(ns_id, model, "e.id>?", (max(index.max_key, covered),))
        _append(index, rows)
        if rows:
            index.max_key = int(rows[-1][0])

    def _vector_rows(
        self, ns_id: int, model: str, where: str, args: Sequence[Any]
    ) -> list[tuple[int, bytes]]:
        return self._conn.execute(
            "SELECT e.id, v.vec FROM episodes e JOIN embeddings v ON v.model=? "
            f"AND v.hash=e.embed_hash WHERE e.namespace_id=? AND {where} ORDER BY e.id",
            (model, ns_id, *args),
        ).fetchall()

    # the graph (store/ann.py) -------------------------------------------------------------
    def _open_graph(self, ns_id: int, model: str, index: _VectorIndex) -> None:
        """Take the namespace's graph file if there is one and it agrees with the store."""
        assert self._ann_folder is not None
        try:
            ann = AnnIndex.load(self._ann_folder, ns_id, model)
            if ann is None or len(ann) < self._ann_threshold:
                return  # none, or this connection searches that many vectors exactly
            self._check_graph(ns_id, model, ann)
        except AnnFileError as exc:
            logger.warning(
                "the vector index of namespace %d is unusable (%s): it is rebuilt from the "
                "store; searches are exact meanwhile",
                ns_id,
                exc,
            )
            AnnIndex.remove(self._ann_folder, ns_id, model)
            return
        index.ann = ann
        index.reset()
        index.revision = -1

    def _check_graph(self, ns_id: int, model: str, ann: AnnIndex) -> None:
        """A file written for another store, or an older copy of this one, holds keys this
        store does not have or vectors it does not hold: compare a sample."""
        top = self._conn.execute(
            "SELECT COALESCE(MAX(id), 0) FROM episodes WHERE namespace_id=?", (ns_id,)
        ).fetchone()[0]
        if ann.manifest.max_key > top:
            raise AnnFileError(f"it covers keys up to {ann.manifest.max_key}, the store has {top}")
        checked = 0
        sample = ann.sample_keys(16)
        for key in sample:
            row = self._conn.execute(
                "SELECT v.vec FROM episodes e JOIN embeddings v ON v.model=? AND "
                "v.hash=e.embed_hash WHERE e.id=? AND e.namespace_id=? AND NOT EXISTS "
                "(SELECT 1 FROM episode_versions x WHERE x.episode_id=e.id AND x.id>?)",
                (model, key, ns_id, ann.manifest.revision),
            ).fetchone()
            if row is None:
                continue  # deleted or updated since: nothing to compare
            stored = np.frombuffer(row[0], dtype=np.float16).astype(np.float32)
            held, vectors = ann.vectors_of(np.array([key], np.int64))
            if not len(held) or not np.array_equal(stored, vectors[0]):
                raise AnnFileError(f"its vector of episode {key} is not the store's")
            checked += 1
        if sample and not checked:
            raise AnnFileError("none of the episodes it was sampled on is in the store")

    def _maybe_build_graph(self, ns_id: int, model: str, index: _VectorIndex) -> None:
        """Start a background build of the graph (or of a graph with the delta folded in)
        when the namespace has grown enough and searches may build; searches go on
        meanwhile."""
        if self.build_on_search and self._graph_due(ns_id, model, index):
            self._start_graph(ns_id, model, index)

    def _graph_due(self, ns_id: int, model: str, index: _VectorIndex) -> bool:
        """Whether a build (no graph yet) or a fold (a large delta) is due now; a graph
        another process has written meanwhile is taken instead."""
        if self._ann_folder is None or index.job.pending or index.job.failed:
            return False
        ann = index.ann
        if ann is None and len(index.keys) < self._ann_threshold:
            return False
        if ann is None:
            self._open_graph(ns_id, model, index)  # another process may have built it
            if index.ann is not None:
                self._refresh_delta(ns_id, model, index)
                return False
        return ann is None or len(index.keys) >= max(DELTA_FOLD_MIN, len(ann) // 20)

    def _start_graph(self, ns_id: int, model: str, index: _VectorIndex) -> None:
        assert self._ann_folder is not None
        ann = index.ann
        folder, keys, matrix = self._ann_folder, index.keys, index.matrix
        dirty, max_key, revision = index.dirty, index.max_key, index.revision
        self.ann_builds += 1
        database = self.path

        def work(control: BuildControl) -> AnnIndex | None:
            control.total = len(keys)
            if ann is None:
                graph = AnnIndex.build(keys, matrix, progress=control.advance)
            else:
                # deleted episodes leave the graph here: their keys are read now
                live = _episode_keys(database, ns_id, ann.manifest.max_key)
                control.check()
                graph = AnnIndex.extend(
                    ann.manifest_path, dirty, keys, matrix, live=live, progress=control.advance
                )
            control.check()  # a stop asked for at the last vector
            AnnIndex.save(graph, folder, ns_id, model, max_key=max_key, revision=revision)
            return AnnIndex.load(folder, ns_id, model)

        failure = (
            f"building the vector index of namespace {ns_id} failed; its searches stay "
            "exact until the store is opened again"
        )
        index.job.start(f"ann-ns{ns_id}", work, logger, failure)

    def _adopt_built(self, index: _VectorIndex) -> None:
        built = index.job.take()
        if built is not None:
            index.ann = built
            index.reset()
            index.revision = -1
            index.stale = True

    def vector_index_info(self, namespace: str, model: str) -> dict[str, int | bool]:
        """How the namespace's vectors are searched now: ``graph`` vectors in the
        approximate index, ``exact`` searched one by one (all of them without a graph, the
        delta with one), ``outdated`` graph vectors replaced by an update, ``building``."""
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return {"graph": 0, "exact": 0, "outdated": 0, "building": False}
            index = self._fresh_index(ns_id, model)
            return {
                "graph": len(index.ann) if index.ann is not None else 0,
                "exact": len(index.keys),
                "outdated": len(index.dirty),
                "building": index.job.pending,
            }

    def wait_for_vector_indexes(self, timeout: float | None = None) -> None:
        """Let running graph builds finish (benchmarks and tests; searches never wait)."""
        for index in list(self._indexes.values()):
            index.job.wait(timeout)

    def _erase_graph(self, ns_id: int) -> None:
        """Forget the namespace's graph files, which hold the vectors of removed texts
        (usearch keeps a removed vector's bytes in the file), after this connection's
        build of them, if any, has ended."""
        for key in [k for k in self._indexes if k[0] == ns_id]:
            index = self._indexes[key]
            index.job.wait()
            if index.ann is not None or index.job.take() is not None:
                del self._indexes[key]  # searched exactly again from the table
        if self._ann_folder is not None:
            AnnIndex.remove(self._ann_folder, ns_id)

    def _drop_indexes(self, ns_id: int) -> None:
        for key in [k for k in self._indexes if k[0] == ns_id]:
            del self._indexes[key]
        if self._ann_folder is not None:
            AnnIndex.remove(self._ann_folder, ns_id)
        self._drop_text(ns_id)

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
                f"SELECT {EP_COLS} FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
                "WHERE e.namespace_id=? AND e.session=? AND e.seq>? ORDER BY e.seq LIMIT ?",
                (ns_id, session, seq, limit),
            ).fetchall()
            return [episode(r) for r in rows]

    def mark_written(self, namespace: str) -> None:
        """Tell the caches that this connection changed the episodes of ``namespace``."""
        ns_id = self._ns_ids.get(namespace)
        self._speakers.pop(ns_id or -1, None)
        self._text_written(ns_id)
        for key in [k for k in self._indexes if k[0] == ns_id]:
            self._indexes[key].stale = True


def _episode_keys(database: str, ns_id: int, up_to: int) -> NDArray[np.int64]:
    """The namespace's episode keys up to ``up_to``, read on a connection of their own
    (a background fold's; the store's stays free for searches)."""
    conn = sqlite3.connect(database, timeout=30)
    try:
        rows = conn.execute(
            "SELECT id FROM episodes WHERE namespace_id=? AND id<=? ORDER BY id", (ns_id, up_to)
        )
        return np.fromiter((r[0] for r in rows), dtype=np.int64)
    finally:
        conn.close()


def _append(index: _VectorIndex, rows: Sequence[tuple[int, bytes]]) -> None:
    if not rows:
        return
    keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    half = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float16)
    matrix = half.reshape(len(rows), -1).astype(np.float32)
    if len(index.keys):
        index.keys = np.concatenate([index.keys, keys])
        index.matrix = np.vstack([index.matrix, matrix])
    else:
        index.keys, index.matrix = keys, matrix


def _top_exact(
    keys: NDArray[np.int64],
    matrix: NDArray[np.float32],
    queries: NDArray[np.float32],
    limit: int,
    allowed: NDArray[np.int64] | None,
) -> list[ScoredKeys]:
    if not len(keys):
        return [[] for _ in range(len(queries))]
    scores = np.asarray(queries, dtype=np.float32) @ matrix.T
    if allowed is not None:
        scores[:, ~np.isin(keys, allowed)] = -np.inf
    return [_scored(keys, row, limit) for row in scores]


def _scored(keys: NDArray[np.int64], scores: NDArray[np.float32], limit: int) -> ScoredKeys:
    """The ``limit`` best (key, score), best first, ties in key order."""
    n = min(limit, len(scores))
    if n <= 0:
        return []
    top = np.argpartition(-scores, n - 1)[:n] if n < len(scores) else np.arange(len(scores))
    top = top[np.lexsort((keys[top], -scores[top]))]
    top = top[np.isfinite(scores[top])]
    return list(zip(keys[top].tolist(), scores[top].tolist(), strict=True))


def _merge(a: ScoredKeys, b: ScoredKeys, limit: int) -> ScoredKeys:
    best: dict[int, float] = {}
    for key, score in [*a, *b]:
        best[key] = max(score, best.get(key, -np.inf))
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
