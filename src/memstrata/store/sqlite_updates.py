"""The SQLite store's hooks of episode updates (the rule is ``sql/updates.py``): the FTS5
row is replaced, provenance found by the episode's key, and once the call is over the
in-process vector index of this connection is told through :meth:`mark_written`; other
connections notice the new largest version id of the namespace (see ``_fresh_index``).
An update without history also rewrites the namespace's FTS5 segments and index files.
"""

from __future__ import annotations

import sqlite3

from memstrata.store.sql.updates import UpdateRules
from memstrata.store.sqlite_base import SQLiteBase
from memstrata.store.sqlite_common import _fts, _rewrite_fts


class EpisodeUpdates(UpdateRules, SQLiteBase):
    """Part of :class:`~memstrata.store.sqlite.SQLiteStore` (with ``sql.updates``)."""

    def _reindex(self, conn: sqlite3.Connection, ns_id: int, key: int, text: str) -> None:
        conn.execute(f"DELETE FROM {_fts(ns_id)} WHERE rowid=?", (key,))
        conn.execute(f"INSERT INTO {_fts(ns_id)}(rowid, body) VALUES (?, ?)", (key, text))

    def _drop_spans(self, conn: sqlite3.Connection, ns_id: int, key: int) -> set[str]:
        affected = {
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT record_id FROM provenance WHERE episode_id=?", (key,)
            )
        }
        conn.execute("DELETE FROM provenance WHERE episode_id=?", (key,))
        return affected

    def _updated(self, conn: sqlite3.Connection, ns_id: int, keep_history: bool) -> None:
        if not keep_history:
            _rewrite_fts(conn, ns_id)

    def _after_update(self, namespace: str, ns_id: int, keep_history: bool) -> None:
        self.mark_written(namespace)
        if not keep_history:
            self._erase_files(ns_id)

    def _versions_stamp(self, ns_id: int) -> int:
        """The namespace's largest version id: it changes with every update there."""
        row = self._conn.execute(
            "SELECT COALESCE(MAX(id), 0) FROM episode_versions WHERE namespace_id=?", (ns_id,)
        ).fetchone()
        return int(row[0])
