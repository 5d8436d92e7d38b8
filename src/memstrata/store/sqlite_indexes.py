"""Who writes the SQLite store's search indexes of large namespaces, and when.

A search that finds a namespace's vector graph (``store/ann.py``) or full-text index
(``store/fulltext.py``) missing or behind may start a build in the background
(``build_on_search``): right for a long-lived process (``memstrata serve``, an
application), which takes the index at a later search. A one-shot command would leave
before the build ends and pay for it for nothing, so it opens the store with builds off,
and the indexes are written here instead, waited for, by ``memstrata build`` and the
worker. Builds still running when the store is closed are abandoned, leaving no file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memstrata.store.background import Background
from memstrata.store.reports import IndexReport
from memstrata.store.sqlite_base import SQLiteBase
from memstrata.store.sqlite_text import _fts_rows

if TYPE_CHECKING:
    pass

VECTORS = "vector graph"
TEXT = "full-text index"


class IndexUpkeep(SQLiteBase):
    """Part of :class:`~memstrata.store.sqlite.SQLiteStore`."""

    def build_indexes(
        self,
        namespace: str,
        model: str,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> IndexReport:
        """Write the namespace's indexes that are missing or behind, one after the other,
        and wait for them; ``progress(index, done, total)`` hears how far each has come.
        Searches of this store go on meanwhile (with the indexes it had)."""
        report = IndexReport()
        for kind in (VECTORS, TEXT):
            with self._lock:
                ns_id = self._ns_id(namespace)
                if ns_id is None or self._small(ns_id):
                    return report
                job = self._job(kind, ns_id, model)
            if job is None:
                continue
            if progress is not None:
                job.control.listener = lambda done, total, kind=kind: progress(kind, done, total)
            job.wait()
            if job.abandoned:
                report.abandoned = True
                break
            if job.failed:
                report.failed.append(kind)
            else:
                report.built.append(kind)
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is not None and not self._small(ns_id):
                index = self._fresh_index(ns_id, model)
                state = self._fresh_text(ns_id)
                report.vectors = len(index.ann) if index.ann is not None else 0
                report.documents = len(state.index) if state.index is not None else 0
        return report

    def indexes_due(self, namespace: str, model: str) -> list[str]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None or self._small(ns_id):
                return []
            index = self._fresh_index(ns_id, model)
            state = self._fresh_text(ns_id)
            due = []
            if index.job.pending or self._graph_due(ns_id, model, index):
                due.append(VECTORS)
            if state.job.pending or self._text_due(ns_id, state):
                due.append(TEXT)
            return due

    def abandon_builds(self) -> None:
        """Stop this connection's running builds and wait until they have stopped (a
        graph or index build stops within a step; a fold of new episodes finishes)."""
        jobs: list[Background[Any]] = [i.job for i in list(self._indexes.values())]
        jobs += [s.job for s in list(self._texts.values())]
        for job in jobs:
            job.abandon()

    def _small(self, ns_id: int) -> bool:
        """Below both thresholds (read without a scan): nothing to build, and nothing
        loaded to find that out."""
        return _fts_rows(self._conn, ns_id) < min(self._ann_threshold, self._text_threshold)

    def _job(self, kind: str, ns_id: int, model: str) -> Background[Any] | None:
        """The build of ``kind`` running for the namespace, or started now if one is due
        (a build that failed on this connection is tried again: this is asked for)."""
        if kind == VECTORS:
            index = self._fresh_index(ns_id, model)
            if index.job.pending:
                return index.job
            index.job.failed = False
            if not self._graph_due(ns_id, model, index):
                return None
            self._start_graph(ns_id, model, index)
            return index.job
        state = self._fresh_text(ns_id)
        if state.job.pending:
            return state.job
        state.job.failed = False
        if not self._text_due(ns_id, state):
            return None
        self._start_text(ns_id, state)
        return state.job
