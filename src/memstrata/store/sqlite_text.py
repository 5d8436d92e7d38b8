"""The SQLite store's BM25: FTS5, and a full-text index of large namespaces
(``store/fulltext.py``).

Below ``fulltext.TEXT_THRESHOLD`` documents, and for searches with filters, BM25 is one
FTS5 query (its commonest terms left out past ``BM25_BUDGET`` postings). From there on a
namespace also gets a tantivy index beside the database, built in the background from
the FTS5 table's bodies while FTS5 answers; episodes written since the index's last
commit are scored in memory (the delta) and folded in by a background job once there are
``fulltext.TEXT_FOLD`` of them. Every hit is checked against the episodes table, so a
deleted episode is never returned.
"""

from __future__ import annotations

import logging
import random
import shutil
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memstrata.store import fulltext
from memstrata.store.background import Background, BuildControl
from memstrata.store.base import ScoredKeys, SearchFilters
from memstrata.store.fulltext import TextDelta, TextIndex, TextIndexError
from memstrata.store.sql.common import chunks as _chunks
from memstrata.store.sqlite_base import SQLiteBase
from memstrata.store.sqlite_common import _fts
from memstrata.store.tokenize import tokenize

logger = logging.getLogger(__name__)

# Postings an FTS5 query may read before its commonest terms are left out (docs/scale.md).
# A namespace of fewer documents than this over the number of query terms is never
# pruned: none of the four dev sets' namespaces (at most about 1,000 documents) is.
BM25_BUDGET: int | None = 50_000
# A query's hits are read from the index in growing pages until the page's last score is
# below the k-th kept one (so ties at the k-th place go to the smaller key, as in FTS5's
# order) or this many were read.
_MOST_FETCHED = 4_096
# How long a large namespace's episode count is kept across writes (see _doc_count).
_COUNT_KEPT_S = 10.0


@dataclass
class _TextState:
    """One namespace's full-text index as this connection searches it."""

    index: TextIndex | None = None
    delta: TextDelta = field(default_factory=TextDelta)
    data_version: int = -1
    stale: bool = True
    looked_for_file: bool = False
    job: Background[TextIndex] = field(default_factory=Background)


class TextSearch(SQLiteBase):
    """Part of :class:`~memstrata.store.sqlite.SQLiteStore`."""

    def _init_text(self, path: str, text_threshold: int | None) -> None:
        in_memory = path in ("", ":memory:") or path.startswith("file:")
        self._text_root: Path | None = None if in_memory else fulltext.folder_for(path)
        self._text_threshold = max(1, text_threshold or fulltext.TEXT_THRESHOLD)
        self._texts: dict[int, _TextState] = {}
        self.text_builds = 0  # index builds and folds this connection started
        self.bm25_budget: int | None = BM25_BUDGET  # None: never leave a term out
        self._doc_freqs: dict[int, tuple[int | None, dict[str, int]]] = {}
        # per namespace: data_version when counted (None: this connection wrote since),
        # the episode count, and when it was counted
        self._doc_counts: dict[int, tuple[int | None, int, float]] = {}

    def bm25_episodes(
        self, namespace: str, terms: Sequence[str], limit: int, filters: SearchFilters | None = None
    ) -> ScoredKeys:
        terms = [t for t in terms if t]  # a repeated term counts twice, as in FTS5
        if not terms or limit <= 0:
            return []
        where, args = self._filter_sql(filters)
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            if not where:  # the index holds no metadata: filters go to FTS5
                indexed = self._bm25_by_index(ns_id, terms, limit)
                if indexed is not None:
                    return indexed
            terms = self._within_budget(ns_id, terms)
            match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
            fts = _fts(ns_id)
            if where:
                sql = (
                    f"SELECT f.rowid, bm25({fts}) AS s FROM {fts} f JOIN episodes e "
                    f"ON e.id=f.rowid WHERE {fts} MATCH ?{where} ORDER BY s, f.rowid LIMIT ?"
                )
            else:
                sql = (
                    f"SELECT rowid, bm25({fts}) AS s FROM {fts} WHERE {fts} MATCH ? "
                    "ORDER BY s, rowid LIMIT ?"
                )
            rows = self._conn.execute(sql, (match, *args, limit)).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def doc_freqs(self, namespace: str, words: Sequence[str]) -> tuple[int, dict[str, int]]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return 0, {}
            known = self._known_freqs(ns_id)
            freqs: dict[str, int] = {}
            for word in words:
                tokens = tokenize(word)
                if tokens:
                    freqs[word] = min(self._doc_freq(ns_id, tok, known) for tok in tokens)
            return self._doc_count(ns_id), freqs

    def _doc_count(self, ns_id: int) -> int:
        """The namespace's episode count. Counting reads an index of the whole namespace
        (about 50 ms for 1,000,000 rows), so past ``fulltext.TEXT_THRESHOLD`` episodes a count
        is kept for up to ``_COUNT_KEPT_S`` seconds across writes: an idf over a count
        some writes old differs in the third digit."""
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        kept = self._doc_counts.get(ns_id)
        if kept is not None:
            seen, count, at = kept
            young = time.monotonic() - at < _COUNT_KEPT_S
            if seen == version or (count >= self._text_threshold and young):
                return count
        row = self._conn.execute(
            "SELECT count(*) FROM episodes WHERE namespace_id=?", (ns_id,)
        ).fetchone()
        self._doc_counts[ns_id] = (version, int(row[0]), time.monotonic())
        return int(row[0])

    def _known_freqs(self, ns_id: int) -> dict[str, int]:
        """The namespace's document frequencies read so far, forgotten when another
        connection writes (this one's writes forget them in :meth:`_text_written`)."""
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        seen, known = self._doc_freqs.get(ns_id, (None, {}))
        if seen != version:
            known = {}
            self._doc_freqs[ns_id] = (version, known)
        return known

    def _within_budget(self, ns_id: int, terms: list[str]) -> list[str]:
        """The query's terms, without its commonest ones when together they would make
        FTS5 read more than ``bm25_budget`` postings (an OR query scores every document
        holding any term). Rarer terms are kept first, at least one; the left-out terms
        are those with the lowest idf, so the ranking moves little (docs/scale.md
        measures how little)."""
        if self.bm25_budget is None or len(terms) < 2:
            return terms
        known = self._known_freqs(ns_id)
        cost = {t: sum(self._doc_freq(ns_id, tok, known) for tok in tokenize(t)) for t in terms}
        if sum(cost.values()) <= self.bm25_budget:
            return terms
        kept: set[str] = set()
        total = 0
        for term in sorted(terms, key=lambda t: cost[t]):
            if kept and total + cost[term] > self.bm25_budget:
                break
            kept.add(term)
            total += cost[term]
        return [t for t in terms if t in kept]

    def _doc_freq(self, ns_id: int, token: str, known: dict[str, int]) -> int:
        """Documents of the namespace holding ``token`` (FTS5's vocabulary), kept in
        ``known`` until the namespace is written."""
        if token not in known:
            vocab = f"temp.{_fts(ns_id)}_vocab"
            try:
                row = self._conn.execute(f"SELECT doc FROM {vocab} WHERE term=?", (token,))
            except sqlite3.OperationalError:  # first use on this connection
                self._conn.execute(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab} "
                    f"USING fts5vocab(main, {_fts(ns_id)}, 'row')"
                )
                row = self._conn.execute(f"SELECT doc FROM {vocab} WHERE term=?", (token,))
            found = row.fetchone()
            known[token] = int(found[0]) if found else 0
        return known[token]

    # searching ----------------------------------------------------------------------------
    def _bm25_by_index(self, ns_id: int, terms: Sequence[str], limit: int) -> ScoredKeys | None:
        """The namespace's BM25 top ``limit`` from its index, or ``None`` when it has none
        (FTS5 answers then). Called with the store's lock held."""
        state = self._fresh_text(ns_id)
        if state.index is None or state.delta.behind:
            return None
        try:
            return self._search_text(ns_id, state, fulltext.phrases_of(terms), limit)
        except (ValueError, OSError) as exc:  # a file went bad under a running search
            logger.warning(
                "the full-text index of namespace %d failed a search (%s): FTS5 answered; "
                "the index is opened and checked again",
                ns_id,
                exc,
            )
            state.index, state.looked_for_file, state.stale = None, False, True
            return None

    def _search_text(
        self, ns_id: int, state: _TextState, phrases: list[list[str]], limit: int
    ) -> ScoredKeys:
        index, delta = state.index, state.delta
        assert index is not None
        if not phrases:
            return []
        n, avgdl = index.stats()
        weights = {" ".join(p): sum(fulltext.idf(n, index.doc_freq(t)) for t in p) for p in phrases}
        fetch = 2 * limit + 8
        while True:
            found = index.search(phrases, fetch)
            # documents the delta holds are scored there, with their text of now
            kept = [(k, s) for k, s in found if k not in delta.dirty and k not in delta.lengths]
            live = set(self._live_keys(ns_id, np.array([k for k, _ in kept], np.int64)).tolist())
            kept = [(k, s) for k, s in kept if k in live]
            if len(found) < fetch or fetch >= _MOST_FETCHED:
                break
            if len(kept) >= limit and found[-1][1] < kept[limit - 1][1]:
                break
            fetch *= 4
        scored = fulltext.score_delta(delta, phrases, avgdl, weights)
        fresh = self._live_keys(ns_id, np.array([k for k, _ in scored], np.int64))
        alive = set(fresh.tolist())
        merged = kept + [(k, s) for k, s in scored if k in alive]
        return sorted(merged, key=lambda kv: (-kv[1], kv[0]))[:limit]

    # keeping in step ----------------------------------------------------------------------
    def _fresh_text(self, ns_id: int) -> _TextState:
        state = self._texts.setdefault(ns_id, _TextState())
        self._adopt_text(state)
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if not state.stale and version == state.data_version:
            return state
        if self._text_root is not None:
            if state.index is None and not state.looked_for_file:
                state.looked_for_file = True
                self._open_text(ns_id, state)
            elif state.index is not None and _moved(state.index):
                self._open_text(ns_id, state)  # another process folded or rebuilt it
            if state.index is not None:
                self._refresh_delta_text(ns_id, state)
        state.data_version = version
        state.stale = False
        self._maybe_build_text(ns_id, state)
        return state

    def _refresh_delta_text(self, ns_id: int, state: _TextState) -> None:
        """The bodies the index lacks (newer keys) or holds outdated (updated since)."""
        assert state.index is not None
        covered = state.index.manifest
        revision = self._versions_stamp(ns_id)
        if revision != state.delta.revision:
            changed = [
                r[0]
                for r in self._conn.execute(
                    "SELECT DISTINCT episode_id FROM episode_versions "
                    "WHERE namespace_id=? AND id>? AND episode_id<=?",
                    (ns_id, covered.revision, covered.max_key),
                )
            ]
            state.delta = TextDelta(max_key=covered.max_key, revision=revision)
            state.delta.dirty = set(changed)
            if len(changed) > fulltext.DELTA_MOST:
                state.delta.behind = True
            for chunk in _chunks(changed if not state.delta.behind else [], 500):
                marks = ",".join("?" * len(chunk))
                for key, body in self._conn.execute(
                    f"SELECT rowid, body FROM {_fts(ns_id)} WHERE rowid IN ({marks})", chunk
                ):
                    state.delta.put(int(key), fulltext.terms_of(body or ""))
        delta = state.delta
        if delta.behind:
            return
        room = fulltext.DELTA_MOST - len(delta)
        rows = self._conn.execute(
            f"SELECT rowid, body FROM {_fts(ns_id)} WHERE rowid>? ORDER BY rowid LIMIT ?",
            (max(delta.max_key, covered.max_key), room + 1),
        ).fetchall()
        if len(rows) > room:
            # a large import: a fold takes it in the background, FTS5 answers until then
            # (tokenizing it here would hold up this search)
            delta.behind = True
            return
        for key, body in rows:
            delta.put(int(key), fulltext.terms_of(body or ""))
            delta.max_key = int(key)

    def _open_text(self, ns_id: int, state: _TextState) -> None:
        """Take the namespace's index if there is one and it agrees with the store."""
        assert self._text_root is not None
        try:
            index = TextIndex.load(self._text_root, ns_id)
            if index is not None and index.manifest.count < self._text_threshold:
                return  # this connection asks FTS5 for namespaces of that size
            if index is not None:
                self._check_text(ns_id, index)
        except TextIndexError as exc:
            self._forget_text(ns_id, state, str(exc))
            return
        if index is not None:
            state.index = index
            state.delta = TextDelta(revision=-1)

    def _check_text(self, ns_id: int, index: TextIndex) -> None:
        """An index written for another store, or an older copy of this one, covers keys
        this store does not have or holds other texts: compare a sample of lengths."""
        covered = index.manifest
        top = self._conn.execute(
            "SELECT COALESCE(MAX(id), 0) FROM episodes WHERE namespace_id=?", (ns_id,)
        ).fetchone()[0]
        if covered.max_key > top:
            raise TextIndexError(f"it covers keys up to {covered.max_key}, the store has {top}")
        sample: dict[int, str] = {}
        rng = random.Random(covered.max_key)
        for _ in range(16 if covered.max_key else 0):
            row = self._conn.execute(
                f"SELECT rowid, body FROM {_fts(ns_id)} WHERE rowid>=? AND rowid<=? "
                "ORDER BY rowid LIMIT 1",
                (rng.randint(1, covered.max_key), covered.max_key),
            ).fetchone()
            if (
                row is None
                or self._conn.execute(
                    "SELECT 1 FROM episode_versions WHERE episode_id=? AND id>?",
                    (row[0], covered.revision),
                ).fetchone()
            ):
                continue  # none there, or updated since the index was written
            sample[int(row[0])] = row[1] or ""
        held = index.lengths_of(list(sample))
        for key, body in sample.items():
            want = len(fulltext.terms_of(body or ""))
            if held.get(int(key)) != want:
                raise TextIndexError(f"its document of episode {key} is not the store's")

    def _forget_text(self, ns_id: int, state: _TextState, why: str) -> None:
        logger.warning(
            "the full-text index of namespace %d is unusable (%s): it is rebuilt from the "
            "store; FTS5 answers meanwhile",
            ns_id,
            why,
        )
        state.index = None
        state.delta = TextDelta()
        state.stale = True
        if self._text_root is not None:
            TextIndex.remove(self._text_root, ns_id)

    # building -----------------------------------------------------------------------------
    def _maybe_build_text(self, ns_id: int, state: _TextState) -> None:
        """Start a background build (a large namespace without an index) or fold (a delta
        of ``TEXT_FOLD`` documents or more) when searches may build; searches go on
        meanwhile."""
        if self.build_on_search and self._text_due(ns_id, state):
            self._start_text(ns_id, state)

    def _text_due(self, ns_id: int, state: _TextState) -> bool:
        """Whether a build or a fold is due now; an index another process has written
        meanwhile is taken instead."""
        root = self._text_root
        if root is None or state.job.pending or state.job.failed:
            return False
        if state.index is None:
            if _fts_rows(self._conn, ns_id) < self._text_threshold:
                return False
            self._open_text(ns_id, state)  # another process may have built it
            if state.index is not None:
                self._refresh_delta_text(ns_id, state)
                return False
            return True
        return len(state.delta) >= fulltext.TEXT_FOLD or state.delta.behind

    def _start_text(self, ns_id: int, state: _TextState) -> None:
        root = self._text_root
        assert root is not None
        index = state.index
        self.text_builds += 1
        path = self.path

        def work(control: BuildControl) -> TextIndex | None:
            try:
                if index is None:
                    _build(path, root, ns_id, control)
                else:
                    _fold(path, root, ns_id, index)
            except _Busy:
                return None  # another process is writing the index; its commit is read later
            return TextIndex.load(root, ns_id)

        failure = (
            f"writing the full-text index of namespace {ns_id} failed; FTS5 answers its "
            "searches until the store is opened again"
        )
        state.job.start(f"fts-ns{ns_id}", work, logger, failure)

    def _adopt_text(self, state: _TextState) -> None:
        built = state.job.take()
        if built is not None:
            state.index = built
            state.delta = TextDelta(revision=-1)
            state.stale = True

    def text_index_info(self, namespace: str) -> dict[str, int | bool]:
        """How the namespace's BM25 is answered now: ``indexed`` documents in the index
        (0: FTS5 answers), ``delta`` scored in memory, ``building``."""
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return {"indexed": 0, "delta": 0, "building": False}
            state = self._fresh_text(ns_id)
            return {
                "indexed": len(state.index) if state.index is not None else 0,
                "delta": len(state.delta) if state.index is not None else 0,
                "building": state.job.pending,
            }

    def wait_for_text_indexes(self, timeout: float | None = None) -> None:
        """Let running builds and folds finish (benchmarks and tests; searches never wait)."""
        for state in list(self._texts.values()):
            state.job.wait(timeout)

    def _erase_text(self, ns_id: int) -> None:
        """Forget the namespace's full-text index files, whose segments keep a deleted
        document's terms until a merge that tantivy's Python binding cannot ask for,
        after this connection's build or fold of them, if any, has ended."""
        state = self._texts.get(ns_id)
        if state is not None:
            state.job.wait()
        self._drop_text(ns_id)

    def _drop_text(self, ns_id: int) -> None:
        self._texts.pop(ns_id, None)
        if self._text_root is not None:
            TextIndex.remove(self._text_root, ns_id)

    def _text_written(self, ns_id: int | None) -> None:
        self._doc_freqs.pop(ns_id or -1, None)
        counted = self._doc_counts.get(ns_id or -1)
        if counted is not None:
            self._doc_counts[ns_id or -1] = (None, *counted[1:])
        state = self._texts.get(ns_id or -1)
        if state is not None:
            state.stale = True


class _Busy(Exception):
    """Another process holds the index's writer."""


def _moved(index: TextIndex) -> bool:
    try:
        return index.manifest_path.stat().st_mtime_ns != index.manifest_mtime
    except OSError:
        return True


def _fts_rows(conn: sqlite3.Connection, ns_id: int) -> int:
    """The FTS5 table's row count, from its averages record (no scan)."""
    row = conn.execute(f"SELECT block FROM {_fts(ns_id)}_data WHERE id=1").fetchone()
    if row is None or not row[0]:
        return 0
    return _varint(bytes(row[0]))


def _varint(data: bytes) -> int:
    """SQLite's variable-length integer at the start of ``data``."""
    value = 0
    for i, byte in enumerate(data[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return value


def _read(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.execute("PRAGMA query_only=1")
    return conn


def _build(path: str, root: Path, ns_id: int, control: BuildControl) -> None:
    """A new index of every body of the namespace, read in one snapshot. Abandoned, it
    leaves no folder behind (none is named by a manifest before the end)."""
    conn = _read(path)
    folder = None
    try:
        conn.execute("BEGIN")
        revision = conn.execute(
            "SELECT COALESCE(MAX(id), 0) FROM episode_versions WHERE namespace_id=?", (ns_id,)
        ).fetchone()[0]
        top = conn.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM {_fts(ns_id)}").fetchone()[0]
        total = _fts_rows(conn, ns_id)
        rows = conn.execute(f"SELECT rowid, body FROM {_fts(ns_id)} WHERE rowid<=?", (top,))
        root.mkdir(parents=True, exist_ok=True)
        index, folder = TextIndex.create(root, ns_id)
        docs = control.each(((int(k), b or "") for k, b in rows), total)
        count = TextIndex.write(index, docs)
        control.check()
        conn.execute("COMMIT")
    except BaseException:
        if folder is not None:
            shutil.rmtree(root / folder, ignore_errors=True)
        raise
    finally:
        conn.close()
    TextIndex.save(root, ns_id, folder, count=count, max_key=int(top), revision=int(revision))


def _fold(path: str, root: Path, ns_id: int, current: TextIndex) -> None:
    """The index with the bodies written since its manifest: new keys added, updated
    ones replaced, deleted ones dropped (looked for only when the index holds more
    documents than the namespace has episodes up to its largest key)."""
    covered = current.manifest
    held = len(current)
    conn = _read(path)
    try:
        conn.execute("BEGIN")
        gone: list[int] = []
        live = conn.execute(
            "SELECT COUNT(*) FROM episodes WHERE namespace_id=? AND id<=?",
            (ns_id, covered.max_key),
        ).fetchone()[0]
        if held > live:
            ids = conn.execute(
                "SELECT id FROM episodes WHERE namespace_id=? AND id<=?", (ns_id, covered.max_key)
            )
            alive = {int(r[0]) for r in ids}
            gone = [k for k in current.held_keys() if k <= covered.max_key and k not in alive]
        revision = conn.execute(
            "SELECT COALESCE(MAX(id), 0) FROM episode_versions WHERE namespace_id=?", (ns_id,)
        ).fetchone()[0]
        changed = [
            int(r[0])
            for r in conn.execute(
                "SELECT DISTINCT episode_id FROM episode_versions "
                "WHERE namespace_id=? AND id>? AND episode_id<=?",
                (ns_id, covered.revision, covered.max_key),
            )
        ]
        docs: list[tuple[int, str]] = []
        for chunk in _chunks(changed, 500):
            marks = ",".join("?" * len(chunk))
            docs += conn.execute(
                f"SELECT rowid, body FROM {_fts(ns_id)} WHERE rowid IN ({marks})", chunk
            ).fetchall()
        docs += conn.execute(
            f"SELECT rowid, body FROM {_fts(ns_id)} WHERE rowid>? ORDER BY rowid",
            (covered.max_key,),
        ).fetchall()
        conn.execute("COMMIT")
    finally:
        conn.close()
    top = max([covered.max_key, *(int(k) for k, _ in docs)])
    # new keys are dropped first too: a crash between a commit and its manifest leaves
    # them in the index already, and a key is one document
    drop = sorted({*changed, *gone, *(int(k) for k, _ in docs)})
    index = TextIndex.open_for_writing(root, covered)
    try:
        count = TextIndex.write(index, ((int(k), b or "") for k, b in docs), drop=drop)
    except ValueError as exc:
        if "LockBusy" in str(exc):
            raise _Busy from exc
        raise
    TextIndex.save(
        root, ns_id, covered.folder, count=count, max_key=int(top), revision=int(revision)
    )
