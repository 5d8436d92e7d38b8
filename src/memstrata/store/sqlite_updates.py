"""The SQLite store's episode updates: versions kept in ``episode_versions``, indexes and
everything derived re-keyed to the new text, all in one transaction per call.

An update keeps the episode's key (so its place in the conversation, ``seq``, and links
from other tables stay valid) and swaps what the indexes see: the FTS row is replaced and
``embed_hash`` points at the new vector. Derived records lose their provenance on the
episode (records left without sources go, as on delete) and the build marks are removed,
so every builder takes the episode again. The in-process vector index of this connection
is told through :meth:`mark_written`; other connections notice the new largest version id
of the namespace (see ``_fresh_index``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from memstrata.models import Episode
from memstrata.store.base import (
    DROPPED_HASH,
    EpisodeVersion,
    PreparedEpisode,
    RemovedEpisode,
    UpdateReport,
    same_episode,
)
from memstrata.store.reports import VERSION_COLS, version_of
from memstrata.store.sql.common import iso as _iso
from memstrata.store.sql.common import now as _now
from memstrata.store.sql.common import ts as _ts
from memstrata.store.sqlite_base import SQLiteBase
from memstrata.store.sqlite_common import _count_speakers, _fts, _rewrite_fts


class EpisodeUpdates(SQLiteBase):
    """Part of :class:`~memstrata.store.sqlite.SQLiteStore`."""

    def _stored_episode(self, ns_id: int, external_id: str) -> Episode | None:
        row = self._conn.execute(
            f"SELECT {self._EP_COLS} FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
            "WHERE e.namespace_id=? AND e.external_id=?",
            (ns_id, external_id),
        ).fetchone()
        return None if row is None else self._episode(row)

    def update_episodes(
        self, namespace: str, episodes: Sequence[PreparedEpisode], *, keep_history: bool = True
    ) -> UpdateReport:
        report = UpdateReport()
        if not episodes:
            return report
        # One transaction: history rows, episode rows, FTS, provenance and build marks of
        # the whole call go together or not at all.
        with self._write() as conn:
            ns_id = self._ns_id(namespace)
            for ep in episodes:
                old = None if ns_id is None else self._stored_episode(ns_id, ep.external_id)
                if ns_id is None or old is None:
                    report.missing.append(ep.external_id)
                elif same_episode(ep, old):
                    report.unchanged.append(ep.external_id)
                else:
                    self._replace(conn, ns_id, old, ep, keep_history)
                    _count_speakers(conn, ns_id, added=[ep.speaker], removed=[old.speaker])
                    report.updated.append(ep.external_id)
            if report.updated and not keep_history:
                assert ns_id is not None
                _rewrite_fts(conn, ns_id)
        if report.updated:
            self.mark_written(namespace)
            if not keep_history:
                assert ns_id is not None
                self._erase_files(ns_id)
        return report

    def _replace(
        self,
        conn: sqlite3.Connection,
        ns_id: int,
        old: Episode,
        ep: PreparedEpisode,
        keep_history: bool = True,
    ) -> None:
        now = _now()
        key = old.key
        last = conn.execute(
            "SELECT COALESCE(MAX(version), 0), MAX(replaced_at) FROM episode_versions "
            "WHERE episode_id=?",
            (key,),
        ).fetchone()
        # The stored version moves into the history: written when the previous update
        # replaced its predecessor, or when the episode was first added.
        if keep_history:
            conn.execute(
                "INSERT INTO episode_versions(namespace_id, episode_id, version, text, "
                "speaker, role, occurred_at, session, metadata, content_hash, embed_hash, "
                "written_at, replaced_at) SELECT namespace_id, id, ?, text, speaker, role, "
                "occurred_at, session, metadata, content_hash, embed_hash, "
                "COALESCE(?, created_at), ? FROM episodes WHERE id=?",
                (int(last[0]) + 1, last[1], now, key),
            )
        else:
            conn.execute("DELETE FROM episode_versions WHERE episode_id=?", (key,))
            conn.execute(
                "INSERT INTO episode_versions(namespace_id, episode_id, version, text, "
                "content_hash, written_at, replaced_at) VALUES (?, ?, ?, '', ?, ?, ?)",
                (ns_id, key, int(last[0]) + 1, DROPPED_HASH, now, now),
            )
        conn.execute(
            "UPDATE episodes SET text=?, speaker=?, role=?, occurred_at=?, occurred_ts=?, "
            "session=?, metadata=?, content_hash=?, embed_hash=? WHERE id=?",
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
                key,
            ),
        )
        conn.execute(f"DELETE FROM {_fts(ns_id)} WHERE rowid=?", (key,))
        conn.execute(f"INSERT INTO {_fts(ns_id)}(rowid, body) VALUES (?, ?)", (key, ep.index_text))
        affected = {
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT record_id FROM provenance WHERE episode_id=?", (key,)
            )
        }
        conn.execute("DELETE FROM provenance WHERE episode_id=?", (key,))
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
        conn.execute("DELETE FROM build_progress WHERE episode_id=?", (key,))

    def episode_history(self, namespace: str, external_id: str) -> list[EpisodeVersion]:
        with self._lock:
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return []
            rows = self._conn.execute(
                f"SELECT e.external_id, {VERSION_COLS} FROM episode_versions v JOIN episodes e "
                "ON e.id=v.episode_id WHERE e.namespace_id=? AND e.external_id=? "
                "AND length(v.content_hash) > 0 ORDER BY v.version",
                (ns_id, external_id),
            ).fetchall()
        return [version_of(namespace, r) for r in rows]

    def _versions_stamp(self, ns_id: int) -> int:
        """The namespace's largest version id: it changes with every update there."""
        row = self._conn.execute(
            "SELECT COALESCE(MAX(id), 0) FROM episode_versions WHERE namespace_id=?", (ns_id,)
        ).fetchone()
        return int(row[0])
