"""The SQLite store's side of erasure (docs/engine.md, "Deleted means gone"): the index
files of a namespace that lost a text, and the WAL (vectors and error texts are the
shared rules of ``sql/erasure.py``).

The rows themselves go in the delete's transaction (``sqlite.py``, ``sqlite_updates.py``),
where the namespace's FTS5 index is also merged into one segment (``_rewrite_fts``);
``secure_delete`` overwrites every freed cell and page with zeros.
"""

from __future__ import annotations

from memstrata.store.sql.erasure import ErasureRules
from memstrata.store.sqlite_base import SQLiteBase


class Erasure(ErasureRules, SQLiteBase):
    """Part of :class:`~memstrata.store.sqlite.SQLiteStore` (with ``sql.erasure``)."""

    def _erase_files(self, ns_id: int) -> None:
        """The vector graph and full-text index files of the namespace hold what was just
        removed (vectors, terms): they go, once any build of them here has finished, and
        are built again from the store (searches are exact and FTS5 meanwhile)."""
        self._erase_graph(ns_id)
        self._erase_text(ns_id)

    def scrub(self) -> bool:
        with self._lock:
            if self.path == ":memory:":
                return True
            busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            return not busy
