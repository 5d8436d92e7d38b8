"""The PostgreSQL store's hooks of episode updates (the rule is ``sql/updates.py``): the
episode's postings and BM25 totals follow its new text, provenance is found by namespace
and key."""

from __future__ import annotations

from typing import Any

import psycopg

from memstrata.store.postgres.common import PostgresBase
from memstrata.store.sql.updates import UpdateRules


class EpisodeUpdates(UpdateRules, PostgresBase):
    """Part of :class:`~memstrata.store.postgres.store.PostgresStore` (with
    ``sql.updates``)."""

    def _reindex(self, conn: psycopg.Connection[Any], ns_id: int, key: int, text: str) -> None:
        self._unindex(conn, ns_id, [key])
        self._index(conn, ns_id, key, text)

    def _drop_spans(self, conn: psycopg.Connection[Any], ns_id: int, key: int) -> set[str]:
        affected = {
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT record_id FROM provenance WHERE namespace_id=%s AND episode_id=%s",
                (ns_id, key),
            ).fetchall()
        }
        conn.execute("DELETE FROM provenance WHERE namespace_id=%s AND episode_id=%s", (ns_id, key))
        return affected
