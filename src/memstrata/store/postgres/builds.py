"""The PostgreSQL store's build queue: done marks and what each builder has left to build
(the rules of failures, retries and leases are shared: ``sql/builds.py``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import psycopg

from memstrata.store.postgres.common import PostgresBase
from memstrata.store.sql.builds import BuildRules


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
