"""Episode updates, written once for the SQL stores: the replaced version goes to
``episode_versions``, the row takes the new text, the text index and everything derived
follow, all in one transaction per call.

An update keeps the episode's key (so its place in the conversation, ``seq``, and links
from other tables stay valid). Derived records lose their provenance on the episode
(records left without sources go, as on delete) and the build marks are removed, so
every builder takes the episode again. How the text index is swapped (FTS5 rows,
postings) and what a backend does once the call is over are its own hooks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
from memstrata.store.sql.common import EP_COLS, EPISODE_VALUES, episode, episode_values, now
from memstrata.store.sql.host import SQLCore


class UpdateRules(SQLCore):
    """Part of a SQL store: ``update_episodes`` and ``episode_history``."""

    # the backend's hooks ----------------------------------------------------------------
    def _reindex(self, conn: Any, ns_id: int, key: int, text: str) -> None:
        """The episode's full-text entry now holds ``text``."""
        raise NotImplementedError

    def _drop_spans(self, conn: Any, ns_id: int, key: int) -> set[str]:
        """Remove the episode's provenance rows; the ids of the records they held."""
        raise NotImplementedError

    def _updated(self, conn: Any, ns_id: int, keep_history: bool) -> None:
        """Inside the call's transaction, once episodes were replaced."""

    def _after_update(self, namespace: str, ns_id: int, keep_history: bool) -> None:
        """After the call's transaction committed, once episodes were replaced."""

    # the rule ---------------------------------------------------------------------------
    def _stored_episode(self, ns_id: int, external_id: str) -> Episode | None:
        row = self._row(
            f"SELECT {EP_COLS} FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
            "WHERE e.namespace_id=? AND e.external_id=?",
            (ns_id, external_id),
        )
        return None if row is None else episode(row)

    def update_episodes(
        self, namespace: str, episodes: Sequence[PreparedEpisode], *, keep_history: bool = True
    ) -> UpdateReport:
        report = UpdateReport()
        if not episodes:
            return report
        # One transaction: history rows, episode rows, the text index, provenance and
        # build marks of the whole call go together or not at all.
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
                    self._count_speakers(conn, ns_id, added=[ep.speaker], removed=[old.speaker])
                    report.updated.append(ep.external_id)
            if report.updated:
                assert ns_id is not None
                self._updated(conn, ns_id, keep_history)
        if report.updated:
            assert ns_id is not None
            self._after_update(namespace, ns_id, keep_history)
        return report

    def _replace(
        self, conn: Any, ns_id: int, old: Episode, ep: PreparedEpisode, keep_history: bool
    ) -> None:
        q, moment, key = self._sql, now(), old.key
        last = conn.execute(
            q(
                "SELECT COALESCE(MAX(version), 0), MAX(replaced_at) FROM episode_versions "
                "WHERE namespace_id=? AND episode_id=?"
            ),
            (ns_id, key),
        ).fetchone()
        # The stored version moves into the history: written when the previous update
        # replaced its predecessor, or when the episode was first added.
        if keep_history:
            conn.execute(
                q(
                    "INSERT INTO episode_versions(namespace_id, episode_id, version, text, "
                    "speaker, role, occurred_at, session, metadata, content_hash, embed_hash, "
                    "written_at, replaced_at) SELECT namespace_id, id, ?, text, speaker, role, "
                    "occurred_at, session, metadata, content_hash, embed_hash, "
                    "COALESCE(?, created_at), ? FROM episodes WHERE namespace_id=? AND id=?"
                ),
                (int(last[0]) + 1, last[1], moment, ns_id, key),
            )
        else:
            conn.execute(
                q("DELETE FROM episode_versions WHERE namespace_id=? AND episode_id=?"),
                (ns_id, key),
            )
            conn.execute(
                q(
                    "INSERT INTO episode_versions(namespace_id, episode_id, version, text, "
                    "content_hash, written_at, replaced_at) VALUES (?, ?, ?, '', ?, ?, ?)"
                ),
                (ns_id, key, int(last[0]) + 1, DROPPED_HASH, moment, moment),
            )
        assignments = ", ".join(f"{c}=?" for c in EPISODE_VALUES.split(", "))
        conn.execute(
            q(f"UPDATE episodes SET {assignments} WHERE namespace_id=? AND id=?"),
            (*episode_values(ep), ns_id, key),
        )
        self._reindex(conn, ns_id, key, ep.index_text)
        affected = self._drop_spans(conn, ns_id, key)
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
            q("DELETE FROM build_progress WHERE namespace_id=? AND episode_id=?"), (ns_id, key)
        )

    def episode_history(self, namespace: str, external_id: str) -> list[EpisodeVersion]:
        rows = self._rows(
            f"SELECT e.external_id, {VERSION_COLS} FROM episode_versions v JOIN episodes e "
            "ON e.namespace_id=v.namespace_id AND e.id=v.episode_id JOIN namespaces n "
            "ON n.id=e.namespace_id WHERE n.name=? AND e.external_id=? "
            "AND length(v.content_hash) > 0 ORDER BY v.version",
            (namespace, external_id),
        )
        return [version_of(namespace, r) for r in rows]
