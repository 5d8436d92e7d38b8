"""The PostgreSQL store's episode updates: the replaced version goes to
``episode_versions``, the postings and everything derived follow the new text, all in one
transaction per call (as ``sqlite_updates`` does)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg

from memstrata.models import Episode
from memstrata.store.base import (
    DROPPED_HASH,
    EpisodeVersion,
    PreparedEpisode,
    RemovedEpisode,
    UpdateReport,
    same_episode,
)
from memstrata.store.postgres.common import PostgresBase, count_speakers
from memstrata.store.reports import VERSION_COLS, version_of
from memstrata.store.sql.common import EP_COLS, episode
from memstrata.store.sql.common import iso as _iso
from memstrata.store.sql.common import now as _now
from memstrata.store.sql.common import ts as _ts


class EpisodeUpdates(PostgresBase):
    """Part of :class:`~memstrata.store.postgres.store.PostgresStore`."""

    def _stored_episode(self, ns_id: int, external_id: str) -> Episode | None:
        row = self._one(
            f"SELECT {EP_COLS} FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
            "WHERE e.namespace_id=%s AND e.external_id=%s",
            (ns_id, external_id),
        )
        return None if row is None else episode(row)

    def update_episodes(
        self, namespace: str, episodes: Sequence[PreparedEpisode], *, keep_history: bool = True
    ) -> UpdateReport:
        report = UpdateReport()
        if not episodes:
            return report
        with self._write() as conn:
            ns_id = self._lock_ns(conn, namespace)
            for ep in episodes:
                old = None if ns_id is None else self._stored_episode(ns_id, ep.external_id)
                if ns_id is None or old is None:
                    report.missing.append(ep.external_id)
                elif same_episode(ep, old):
                    report.unchanged.append(ep.external_id)
                else:
                    self._replace(conn, ns_id, old, ep, keep_history)
                    count_speakers(conn, ns_id, added=[ep.speaker], removed=[old.speaker])
                    report.updated.append(ep.external_id)
        return report

    def _replace(
        self,
        conn: psycopg.Connection[Any],
        ns_id: int,
        old: Episode,
        ep: PreparedEpisode,
        keep_history: bool = True,
    ) -> None:
        now = _now()
        key = old.key
        last = conn.execute(
            "SELECT COALESCE(max(version), 0), max(replaced_at) FROM episode_versions "
            "WHERE namespace_id=%s AND episode_id=%s",
            (ns_id, key),
        ).fetchone()
        assert last is not None
        # The stored version moves into the history: written when the previous update
        # replaced its predecessor, or when the episode was first added.
        if keep_history:
            conn.execute(
                "INSERT INTO episode_versions(namespace_id, episode_id, version, text, "
                "speaker, role, occurred_at, session, metadata, content_hash, embed_hash, "
                "written_at, replaced_at) SELECT namespace_id, id, %s, text, speaker, role, "
                "occurred_at, session, metadata, content_hash, embed_hash, "
                "COALESCE(%s, created_at), %s FROM episodes WHERE namespace_id=%s AND id=%s",
                (int(last[0]) + 1, last[1], now, ns_id, key),
            )
        else:
            conn.execute(
                "DELETE FROM episode_versions WHERE namespace_id=%s AND episode_id=%s",
                (ns_id, key),
            )
            conn.execute(
                "INSERT INTO episode_versions(namespace_id, episode_id, version, text, "
                "content_hash, written_at, replaced_at) VALUES (%s, %s, %s, '', %s, %s, %s)",
                (ns_id, key, int(last[0]) + 1, DROPPED_HASH, now, now),
            )
        self._unindex(conn, ns_id, [key])
        conn.execute(
            "UPDATE episodes SET text=%s, speaker=%s, role=%s, occurred_at=%s, occurred_ts=%s, "
            "session=%s, metadata=%s, content_hash=%s, embed_hash=%s "
            "WHERE namespace_id=%s AND id=%s",
            (
                ep.text,
                ep.speaker,
                ep.role,
                _iso(ep.occurred_at),
                _ts(ep.occurred_at),
                ep.session,
                json.dumps(ep.metadata, ensure_ascii=False) if ep.metadata else None,
                ep.content_hash,
                ep.embed_hash,
                ns_id,
                key,
            ),
        )
        self._index(conn, ns_id, key, ep.index_text)
        affected = {
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT record_id FROM provenance WHERE namespace_id=%s AND episode_id=%s",
                (ns_id, key),
            ).fetchall()
        }
        conn.execute("DELETE FROM provenance WHERE namespace_id=%s AND episode_id=%s", (ns_id, key))
        gone = RemovedEpisode(
            id=old.id,
            text=old.text,
            speaker=old.speaker,
            session=old.session,
            seq=old.seq,
            key=key,
            deleted=False,
        )
        self._follow_provenance(conn, ns_id, affected, [gone])
        conn.execute(
            "DELETE FROM build_progress WHERE namespace_id=%s AND episode_id=%s", (ns_id, key)
        )

    def episode_history(self, namespace: str, external_id: str) -> list[EpisodeVersion]:
        rows = self._all(
            f"SELECT e.external_id, {VERSION_COLS} FROM episode_versions v JOIN episodes e "
            "ON e.namespace_id=v.namespace_id AND e.id=v.episode_id JOIN namespaces n "
            "ON n.id=e.namespace_id WHERE n.name=%s AND e.external_id=%s "
            "AND length(v.content_hash) > 0 ORDER BY v.version",
            (namespace, external_id),
        )
        return [version_of(namespace, r) for r in rows]
