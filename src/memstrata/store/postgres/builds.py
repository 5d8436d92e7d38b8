"""The PostgreSQL store's build bookkeeping: progress marks, failures and retries, leases
(the same rules as ``sqlite_builds``; see there for why the queue is derived)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import psycopg

from memstrata.models import Episode
from memstrata.store.base import BuildFailure
from memstrata.store.postgres.common import PostgresBase
from memstrata.store.sql.common import EP_COLS, episode, process_alive


def _stamp(moment: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(moment))


class BuildBookkeeping(PostgresBase):
    """Part of :class:`~memstrata.store.postgres.store.PostgresStore`."""

    def _mark_done(
        self, conn: psycopg.Connection[Any], ns_id: int, builder: str, keys: Sequence[int]
    ) -> None:
        """Done marks; an episode deleted meanwhile is skipped, not an error."""
        conn.execute(
            "INSERT INTO build_progress(namespace_id, builder, episode_id, status, updated_at, "
            "attempts, error, retry_at) SELECT %s, %s, e.id, 'done', %s, 0, NULL, NULL "
            "FROM episodes e WHERE e.namespace_id=%s AND e.id = ANY(%s) "
            "ON CONFLICT (namespace_id, builder, episode_id) DO UPDATE SET status='done', "
            "updated_at=EXCLUDED.updated_at, attempts=0, error=NULL, retry_at=NULL",
            (ns_id, builder, _stamp(), ns_id, [int(k) for k in keys]),
        )

    def built_keys(self, namespace: str, builder: str) -> set[int]:
        rows = self._all(
            "SELECT b.episode_id FROM build_progress b JOIN namespaces n ON n.id=b.namespace_id "
            "WHERE n.name=%s AND b.builder=%s AND b.status='done'",
            (namespace, builder),
        )
        return {int(r[0]) for r in rows}

    def reset_build(self, namespace: str, builder: str) -> None:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return
            conn.execute(
                "DELETE FROM build_progress WHERE namespace_id=%s AND builder=%s", (ns_id, builder)
            )
            conn.execute(
                "DELETE FROM records WHERE namespace_id=%s AND builder=%s", (ns_id, builder)
            )

    def forget_builds(self, namespace: str, builder: str, episode_ids: Sequence[str]) -> None:
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return
            conn.execute(
                "DELETE FROM build_progress b USING episodes e WHERE b.namespace_id=%s "
                "AND b.builder=%s AND e.namespace_id=b.namespace_id AND e.id=b.episode_id "
                "AND e.external_id = ANY(%s)",
                (ns_id, builder, list(episode_ids)),
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
        rows = self._all(
            f"SELECT {EP_COLS} FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
            "WHERE n.name=%s AND e.id>%s AND NOT EXISTS (SELECT 1 FROM build_progress b "
            "WHERE b.namespace_id=e.namespace_id AND b.builder=%s AND b.episode_id=e.id AND "
            "(b.status IN ('done','dead') OR COALESCE(b.retry_at, 0) > %s)) "
            "ORDER BY e.id LIMIT %s",
            (namespace, after_key, builder, moment, limit),
        )
        return [episode(r) for r in rows]

    def pending_count(self, namespace: str, builder: str) -> int:
        row = self._one(
            "SELECT count(*) FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
            "WHERE n.name=%s AND NOT EXISTS (SELECT 1 FROM build_progress b WHERE "
            "b.namespace_id=e.namespace_id AND b.builder=%s AND b.episode_id=e.id "
            "AND b.status='done')",
            (namespace, builder),
        )
        return int(row[0])

    def unbuilt(
        self, namespace: str, builders: Sequence[str], external_ids: Sequence[str]
    ) -> list[str]:
        if not builders or not external_ids:
            return []
        rows = self._all(
            "SELECT e.external_id FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
            "CROSS JOIN unnest(%s::text[]) AS w(builder) WHERE n.name=%s "
            "AND e.external_id = ANY(%s) AND NOT EXISTS (SELECT 1 FROM build_progress b "
            "WHERE b.namespace_id=e.namespace_id AND b.builder=w.builder "
            "AND b.episode_id=e.id AND b.status='done')",
            (list(dict.fromkeys(builders)), namespace, list(external_ids)),
        )
        found = {r[0] for r in rows}
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
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return
            for key, error in failures:
                if not conn.execute(
                    "SELECT 1 FROM episodes WHERE namespace_id=%s AND id=%s", (ns_id, int(key))
                ).fetchone():
                    continue  # deleted since it was handed out
                row = conn.execute(
                    "SELECT attempts FROM build_progress WHERE namespace_id=%s AND builder=%s "
                    "AND episode_id=%s AND status<>'done'",
                    (ns_id, builder, int(key)),
                ).fetchone()
                attempts = (int(row[0]) if row else 0) + 1
                status = "dead" if attempts >= max_attempts else "failed"
                conn.execute(
                    "INSERT INTO build_progress(namespace_id, builder, episode_id, status, "
                    "updated_at, attempts, error, retry_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s) "
                    "ON CONFLICT (namespace_id, builder, episode_id) DO UPDATE SET "
                    "status=EXCLUDED.status, updated_at=EXCLUDED.updated_at, "
                    "attempts=EXCLUDED.attempts, error=EXCLUDED.error, retry_at=EXCLUDED.retry_at",
                    (
                        ns_id,
                        builder,
                        int(key),
                        status,
                        _stamp(now),
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
                "WHERE namespace_id=%s AND status IN ('failed','dead') "
                "AND (%s::text IS NULL OR builder=%s)",
                (ns_id, builder, builder),
            )
            return int(cur.rowcount)

    def build_failures(
        self, namespace: str, builder: str | None = None, limit: int = 50
    ) -> list[BuildFailure]:
        rows = self._all(
            "SELECT e.external_id, b.builder, b.status, b.attempts, COALESCE(b.error, ''), "
            "b.retry_at FROM build_progress b JOIN namespaces n ON n.id=b.namespace_id "
            "JOIN episodes e ON e.namespace_id=b.namespace_id AND e.id=b.episode_id "
            "WHERE n.name=%s AND b.status IN ('failed','dead') "
            "AND (%s::text IS NULL OR b.builder=%s) ORDER BY b.episode_id, b.builder LIMIT %s",
            (namespace, builder, builder, limit),
        )
        return [BuildFailure(*r) for r in rows]

    def _build_counts(self, ns_id: int) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for builder, status, n in self._all(
            "SELECT builder, status, count(*) FROM build_progress WHERE namespace_id=%s "
            "GROUP BY builder, status ORDER BY builder",
            (ns_id,),
        ):
            counts = out.setdefault(builder, {"done": 0, "failed": 0, "dead": 0})
            counts[status] = counts.get(status, 0) + int(n)
        return out

    # leases -----------------------------------------------------------------------------
    def acquire_lease(self, namespace: str, builder: str, owner: str, ttl_s: float) -> bool:
        now = time.time()
        with self._write() as conn:
            ns_id = self._lock_ns(conn, namespace)
            if ns_id is None:
                return False
            row = conn.execute(
                "SELECT owner, expires FROM build_leases WHERE namespace_id=%s AND builder=%s "
                "FOR UPDATE",
                (ns_id, builder),
            ).fetchone()
            if row is not None and row[0] != owner and row[1] > now and process_alive(row[0]):
                return False
            conn.execute(
                "INSERT INTO build_leases VALUES (%s,%s,%s,%s) ON CONFLICT (namespace_id, builder) "
                "DO UPDATE SET owner=EXCLUDED.owner, expires=EXCLUDED.expires",
                (ns_id, builder, owner, now + ttl_s),
            )
            return True

    def release_lease(self, namespace: str, builder: str, owner: str) -> None:
        with self._write() as conn:
            conn.execute(
                "DELETE FROM build_leases l USING namespaces n WHERE n.id=l.namespace_id "
                "AND n.name=%s AND l.builder=%s AND l.owner=%s",
                (namespace, builder, owner),
            )

    def lease_holder(self, namespace: str, builder: str) -> str | None:
        row = self._one(
            "SELECT l.owner, l.expires FROM build_leases l JOIN namespaces n "
            "ON n.id=l.namespace_id WHERE n.name=%s AND l.builder=%s",
            (namespace, builder),
        )
        if row is None or row[1] <= time.time() or not process_alive(row[0]):
            return None
        return str(row[0])
