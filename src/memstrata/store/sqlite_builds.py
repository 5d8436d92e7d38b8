"""The SQLite store's build queue: done marks and what each builder has left to build
(the rules of failures, retries and leases are shared: ``sql/builds.py``)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

from memstrata.store.sql.builds import BuildRules
from memstrata.store.sql.common import chunks as _chunks
from memstrata.store.sqlite_base import SQLiteBase


class BuildBookkeeping(BuildRules, SQLiteBase):
    """Part of :class:`~memstrata.store.sqlite.SQLiteStore` (with ``sql.builds``)."""

    def _mark_done(
        self, conn: sqlite3.Connection, ns_id: int, builder: str, keys: Sequence[int]
    ) -> None:
        """Done marks; an episode deleted meanwhile is skipped, not an error."""
        now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
        conn.executemany(
            "INSERT OR REPLACE INTO build_progress(namespace_id, builder, episode_id, status, "
            "updated_at, attempts, error, retry_at) SELECT ?,?,?,'done',?,0,NULL,NULL "
            "WHERE EXISTS (SELECT 1 FROM episodes WHERE id=?)",
            [(ns_id, builder, key, now, key) for key in keys],
        )

    def forget_builds(self, namespace: str, builder: str, episode_ids: Sequence[str]) -> None:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return
            for chunk in _chunks(list(episode_ids), 500):
                marks = ",".join("?" * len(chunk))
                conn.execute(
                    "DELETE FROM build_progress WHERE namespace_id=? AND builder=? AND "
                    f"episode_id IN (SELECT id FROM episodes WHERE namespace_id=? AND "
                    f"external_id IN ({marks}))",
                    (ns_id, builder, ns_id, *chunk),
                )

    def unbuilt(
        self, namespace: str, builders: Sequence[str], external_ids: Sequence[str]
    ) -> list[str]:
        found: dict[str, None] = {}
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            for builder in dict.fromkeys(builders):
                for chunk in _chunks(list(external_ids), 500):
                    marks = ",".join("?" * len(chunk))
                    for (eid,) in self._conn.execute(
                        f"SELECT e.external_id FROM episodes e WHERE e.namespace_id=? AND "
                        f"e.external_id IN ({marks}) AND NOT EXISTS (SELECT 1 FROM "
                        "build_progress b WHERE b.namespace_id=e.namespace_id AND "
                        "b.builder=? AND b.episode_id=e.id AND b.status='done')",
                        (ns_id, *chunk, builder),
                    ):
                        found[eid] = None
        return [i for i in external_ids if i in found]
