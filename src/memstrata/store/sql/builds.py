"""The build marks' rules: failures and their retry policy, counts, resets and leases.

A builder's queue is every episode of the namespace without a ``done`` mark. A failed
attempt keeps its error (cut to :data:`ERROR_CHARS`) and the time of the next try, which
doubles with each attempt; at the last allowed attempt the mark turns ``dead`` and stays
out of the queue until :meth:`BuildRules.retry_failed`. Leases keep two processes from
building the same (namespace, builder) at once. Writing done marks and a few reads of the
queue stay each backend's (``sqlite_builds``, ``postgres/builds``): the SQL differs
there, not the rule.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from memstrata.models import Episode
from memstrata.store.base import BuildFailure
from memstrata.store.sql.common import EP_COLS, episode, process_alive, stamp
from memstrata.store.sql.host import SQLCore

#: characters of a failure's error text kept with its mark
ERROR_CHARS = 1000


def retry_at(moment: float, backoff_s: float, attempts: int) -> float:
    """When a mark failed ``attempts`` times is due again: the backoff doubles each time."""
    return moment + backoff_s * 2 ** (attempts - 1)


class BuildRules(SQLCore):
    """Part of a SQL store: the rules of ``build_progress`` and ``build_leases``."""

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
        moment = time.time()
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return
            for key, error in failures:
                found = conn.execute(
                    self._sql("SELECT 1 FROM episodes WHERE namespace_id=? AND id=?"),
                    (ns_id, int(key)),
                ).fetchone()
                if found is None:
                    continue  # deleted since it was handed out
                row = conn.execute(
                    self._sql(
                        "SELECT attempts FROM build_progress WHERE namespace_id=? AND builder=? "
                        "AND episode_id=? AND status<>'done'"
                    ),
                    (ns_id, builder, int(key)),
                ).fetchone()
                attempts = (int(row[0]) if row else 0) + 1
                status = "dead" if attempts >= max_attempts else "failed"
                conn.execute(
                    self._sql(
                        "INSERT INTO build_progress(namespace_id, builder, episode_id, status, "
                        "updated_at, attempts, error, retry_at) VALUES (?,?,?,?,?,?,?,?) "
                        "ON CONFLICT (namespace_id, builder, episode_id) DO UPDATE SET "
                        "status=EXCLUDED.status, updated_at=EXCLUDED.updated_at, "
                        "attempts=EXCLUDED.attempts, error=EXCLUDED.error, "
                        "retry_at=EXCLUDED.retry_at"
                    ),
                    (
                        ns_id,
                        builder,
                        int(key),
                        status,
                        stamp(moment),
                        attempts,
                        error[:ERROR_CHARS],
                        retry_at(moment, backoff_s, attempts),
                    ),
                )

    def retry_failed(self, namespace: str, builder: str | None = None) -> int:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return 0
            cur = conn.execute(
                self._sql(
                    "UPDATE build_progress SET status='failed', attempts=0, retry_at=0 "
                    "WHERE namespace_id=? AND status IN ('failed','dead') "
                    f"AND ({self.dialect.text_param} IS NULL OR builder=?)"
                ),
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
            rows = self._rows(
                "SELECT e.external_id, b.builder, b.status, b.attempts, COALESCE(b.error, ''), "
                "b.retry_at FROM build_progress b JOIN episodes e "
                "ON e.namespace_id=b.namespace_id AND e.id=b.episode_id "
                "WHERE b.namespace_id=? AND b.status IN ('failed','dead') "
                f"AND ({self.dialect.text_param} IS NULL OR b.builder=?) "
                "ORDER BY b.episode_id, b.builder LIMIT ?",
                (ns_id, builder, builder, limit),
            )
            return [BuildFailure(*r) for r in rows]

    def _build_counts(self, ns_id: int) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for builder, status, n in self._rows(
            "SELECT builder, status, COUNT(*) FROM build_progress WHERE namespace_id=? "
            "GROUP BY builder, status ORDER BY builder",
            (ns_id,),
        ):
            counts = out.setdefault(builder, {"done": 0, "failed": 0, "dead": 0})
            counts[status] = counts.get(status, 0) + int(n)
        return out

    def reset_build(self, namespace: str, builder: str) -> None:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return
            for table in ("build_progress", "records"):
                conn.execute(
                    self._sql(f"DELETE FROM {table} WHERE namespace_id=? AND builder=?"),
                    (ns_id, builder),
                )

    def built_keys(self, namespace: str, builder: str) -> set[int]:
        rows = self._rows(
            "SELECT b.episode_id FROM build_progress b JOIN namespaces n ON n.id=b.namespace_id "
            "WHERE n.name=? AND b.builder=? AND b.status='done'",
            (namespace, builder),
        )
        return {int(r[0]) for r in rows}

    def pending_episodes(
        self,
        namespace: str,
        builder: str,
        limit: int = 1000,
        after_key: int = 0,
        now: float | None = None,
    ) -> list[Episode]:
        moment = time.time() if now is None else now
        rows = self._rows(
            f"SELECT {EP_COLS} FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
            "WHERE n.name=? AND e.id>? AND NOT EXISTS (SELECT 1 FROM build_progress b "
            "WHERE b.namespace_id=e.namespace_id AND b.builder=? AND b.episode_id=e.id AND "
            "(b.status IN ('done','dead') OR COALESCE(b.retry_at, 0) > ?)) "
            "ORDER BY e.id LIMIT ?",
            (namespace, after_key, builder, moment, limit),
        )
        return [episode(r) for r in rows]

    def pending_count(self, namespace: str, builder: str) -> int:
        row = self._row(
            "SELECT COUNT(*) FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
            "WHERE n.name=? AND NOT EXISTS (SELECT 1 FROM build_progress b WHERE "
            "b.namespace_id=e.namespace_id AND b.builder=? AND b.episode_id=e.id "
            "AND b.status='done')",
            (namespace, builder),
        )
        return int(row[0])

    # leases -----------------------------------------------------------------------------
    def acquire_lease(self, namespace: str, builder: str, owner: str, ttl_s: float) -> bool:
        moment = time.time()
        with self._write() as conn:
            ns_id = self._lock_ns(conn, namespace)
            if ns_id is None:
                return False
            row = conn.execute(
                self._sql(
                    "SELECT owner, expires FROM build_leases WHERE namespace_id=? AND builder=?"
                    + self.dialect.for_update
                ),
                (ns_id, builder),
            ).fetchone()
            if row is not None and row[0] != owner and row[1] > moment and process_alive(row[0]):
                return False
            conn.execute(
                self._sql(
                    "INSERT INTO build_leases VALUES (?,?,?,?) ON CONFLICT (namespace_id, builder) "
                    "DO UPDATE SET owner=EXCLUDED.owner, expires=EXCLUDED.expires"
                ),
                (ns_id, builder, owner, moment + ttl_s),
            )
            return True

    def release_lease(self, namespace: str, builder: str, owner: str) -> None:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is not None:
                conn.execute(
                    self._sql(
                        "DELETE FROM build_leases WHERE namespace_id=? AND builder=? AND owner=?"
                    ),
                    (ns_id, builder, owner),
                )

    def lease_holder(self, namespace: str, builder: str) -> str | None:
        row = self._row(
            "SELECT l.owner, l.expires FROM build_leases l JOIN namespaces n "
            "ON n.id=l.namespace_id WHERE n.name=? AND l.builder=?",
            (namespace, builder),
        )
        if row is None or row[1] <= time.time() or not process_alive(row[0]):
            return None
        return str(row[0])
