"""The SQLite store's side of erasure (docs/engine.md, "Deleted means gone"): vectors no
stored text points to, the index files of a namespace that lost a text, and the WAL.

The rows themselves go in the delete's transaction (``sqlite.py``, ``sqlite_updates.py``),
where the namespace's FTS5 index is also merged into one segment (``_rewrite_fts``);
``secure_delete`` overwrites every freed cell and page with zeros.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from memstrata.store.sqlite_common import _chunks


class Erasure:
    """Mixin of :class:`~memstrata.store.sqlite.SQLiteStore`."""

    if TYPE_CHECKING:
        path: str
        _conn: sqlite3.Connection
        _lock: threading.RLock

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...
        def _rows_in(self, sql: str, values: Sequence[Any], *lead: Any) -> list[Any]: ...
        def _erase_graph(self, ns_id: int) -> None: ...
        def _erase_text(self, ns_id: int) -> None: ...

    def forget_embeddings(self, hashes: Sequence[bytes]) -> int:
        wanted = list(dict.fromkeys(hashes))
        if not wanted:
            return 0
        with self._write() as conn:
            used: set[bytes] = set()
            for table in ("episodes", "episode_versions"):
                used.update(
                    r[0]
                    for r in self._rows_in(
                        f"SELECT DISTINCT embed_hash FROM {table} WHERE embed_hash IN ({{marks}})",
                        wanted,
                    )
                )
            gone = [h for h in wanted if h not in used]
            removed = 0
            for chunk in _chunks(gone, 500):
                marks = ",".join("?" * len(chunk))
                cur = conn.execute(f"DELETE FROM embeddings WHERE hash IN ({marks})", chunk)
                removed += cur.rowcount
            return removed

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
