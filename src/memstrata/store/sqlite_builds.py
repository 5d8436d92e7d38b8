"""The SQLite store's build bookkeeping: progress marks, failures and retries, leases.

A builder's queue is every episode of the namespace without a ``done`` mark. Failed
attempts keep their error and the time of the next try; at the last allowed attempt the
mark turns ``dead`` and stays out of the queue until :meth:`retry_failed`. Leases keep two
processes from building the same (namespace, builder) at once.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

from memstrata.models import Episode
from memstrata.store.base import BuildFailure
from memstrata.store.sql.common import chunks as _chunks
from memstrata.store.sql.common import process_alive
from memstrata.store.sqlite_base import SQLiteBase


class BuildBookkeeping(SQLiteBase):
    """Part of :class:`~memstrata.store.sqlite.SQLiteStore`."""

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

    def built_keys(self, namespace: str, builder: str) -> set[int]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return set()
            return {
                r[0]
                for r in self._conn.execute(
                    "SELECT episode_id FROM build_progress WHERE namespace_id=? AND builder=? "
                    "AND status='done'",
                    (ns_id, builder),
                )
            }

    def reset_build(self, namespace: str, builder: str) -> None:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return
            conn.execute(
                "DELETE FROM build_progress WHERE namespace_id=? AND builder=?", (ns_id, builder)
            )
            conn.execute("DELETE FROM records WHERE namespace_id=? AND builder=?", (ns_id, builder))

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

    def pending_episodes(
        self,
        namespace: str,
        builder: str,
        limit: int = 1000,
        after_key: int = 0,
        now: float | None = None,
    ) -> list[Episode]:
        moment = time.time() if now is None else now
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            rows = self._conn.execute(
                f"SELECT {self._EP_COLS} FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
                "WHERE e.namespace_id=? AND e.id>? AND NOT EXISTS (SELECT 1 FROM build_progress b "
                "WHERE b.namespace_id=e.namespace_id AND b.builder=? AND b.episode_id=e.id AND "
                "(b.status IN ('done','dead') OR COALESCE(b.retry_at, 0) > ?)) "
                "ORDER BY e.id LIMIT ?",
                (ns_id, after_key, builder, moment, limit),
            ).fetchall()
            return [self._episode(r) for r in rows]

    def pending_count(self, namespace: str, builder: str) -> int:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return 0
            row = self._conn.execute(
                "SELECT COUNT(*) FROM episodes e WHERE e.namespace_id=? AND NOT EXISTS "
                "(SELECT 1 FROM build_progress b WHERE b.namespace_id=e.namespace_id AND "
                "b.builder=? AND b.episode_id=e.id AND b.status='done')",
                (ns_id, builder),
            ).fetchone()
            return int(row[0])

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

    def mark_failed(
        self,
        namespace: str,
        builder: str,
        failures: Sequence[tuple[int, str]],
        max_attempts: int,
        backoff_s: float,
    ) -> None:
        if not failures:
            return
        now = time.time()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now))
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return
            for key, error in failures:
                if conn.execute("SELECT 1 FROM episodes WHERE id=?", (key,)).fetchone() is None:
                    continue  # deleted since it was handed out
                row = conn.execute(
                    "SELECT attempts FROM build_progress WHERE namespace_id=? AND builder=? "
                    "AND episode_id=? AND status!='done'",
                    (ns_id, builder, key),
                ).fetchone()
                attempts = (int(row[0]) if row else 0) + 1
                status = "dead" if attempts >= max_attempts else "failed"
                conn.execute(
                    "INSERT OR REPLACE INTO build_progress(namespace_id, builder, episode_id, "
                    "status, updated_at, attempts, error, retry_at) VALUES (?,?,?,?,?,?,?,?)",
                    (
                        ns_id,
                        builder,
                        key,
                        status,
                        stamp,
                        attempts,
                        error[:1000],
                        now + backoff_s * 2 ** (attempts - 1),
                    ),
                )

    def retry_failed(self, namespace: str, builder: str | None = None) -> int:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return 0
            cur = conn.execute(
                "UPDATE build_progress SET status='failed', attempts=0, retry_at=0 "
                "WHERE namespace_id=? AND status IN ('failed','dead') AND (? IS NULL OR builder=?)",
                (ns_id, builder, builder),
            )
            return int(cur.rowcount)

    def build_failures(
        self, namespace: str, builder: str | None = None, limit: int = 50
    ) -> list[BuildFailure]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            rows = self._conn.execute(
                "SELECT e.external_id, b.builder, b.status, b.attempts, COALESCE(b.error, ''), "
                "b.retry_at FROM build_progress b JOIN episodes e ON e.id=b.episode_id "
                "WHERE b.namespace_id=? AND b.status IN ('failed','dead') "
                "AND (? IS NULL OR b.builder=?) ORDER BY b.episode_id LIMIT ?",
                (ns_id, builder, builder, limit),
            ).fetchall()
            return [BuildFailure(*r) for r in rows]

    def _build_counts(self, ns_id: int) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for builder, status, n in self._conn.execute(
            "SELECT builder, status, COUNT(*) FROM build_progress WHERE namespace_id=? "
            "GROUP BY builder, status",
            (ns_id,),
        ):
            counts = out.setdefault(builder, {"done": 0, "failed": 0, "dead": 0})
            counts[status] = counts.get(status, 0) + int(n)
        return out

    # leases -----------------------------------------------------------------------------
    def acquire_lease(self, namespace: str, builder: str, owner: str, ttl_s: float) -> bool:
        now = time.time()
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return False
            row = conn.execute(
                "SELECT owner, expires FROM build_leases WHERE namespace_id=? AND builder=?",
                (ns_id, builder),
            ).fetchone()
            if row is not None and row[0] != owner and row[1] > now and process_alive(row[0]):
                return False
            conn.execute(
                "INSERT OR REPLACE INTO build_leases VALUES (?,?,?,?)",
                (ns_id, builder, owner, now + ttl_s),
            )
            return True

    def release_lease(self, namespace: str, builder: str, owner: str) -> None:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is not None:
                conn.execute(
                    "DELETE FROM build_leases WHERE namespace_id=? AND builder=? AND owner=?",
                    (ns_id, builder, owner),
                )

    def lease_holder(self, namespace: str, builder: str) -> str | None:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return None
            row = self._conn.execute(
                "SELECT owner, expires FROM build_leases WHERE namespace_id=? AND builder=?",
                (ns_id, builder),
            ).fetchone()
            if row is None or row[1] <= time.time() or not process_alive(row[0]):
                return None
            return str(row[0])
