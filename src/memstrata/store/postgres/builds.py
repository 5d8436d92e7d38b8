"""The PostgreSQL store's build queue: done marks and what each builder has left to build
(the rules of failures, retries and leases are shared: ``sql/builds.py``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import psycopg

from memstrata.models import Episode
from memstrata.store.postgres.common import PostgresBase
from memstrata.store.sql.builds import BuildRules
from memstrata.store.sql.common import EP_COLS, episode


def _stamp(moment: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(moment))


class BuildBookkeeping(BuildRules, PostgresBase):
    """Part of :class:`~memstrata.store.postgres.store.PostgresStore` (with
    ``sql.builds``)."""

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
