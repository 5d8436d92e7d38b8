"""Episodes and namespaces as both SQL stores read and add them, and the store's stats.

Adding is one transaction: each episode takes the next ``seq`` of its namespace unless
its id is stored already, in which case it is compared with what is stored (the same:
existing; different: a conflict, left as it is). The text index of the new episodes
(FTS5 rows, postings) is the backend's hook.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memstrata.models import Episode
from memstrata.store.base import (
    AddReport,
    EpisodeMeta,
    EpisodeText,
    NamespaceStats,
    PreparedEpisode,
    same_episode,
)
from memstrata.store.sql.common import EP_COLS, EPISODE_VALUES, episode, episode_values, now
from memstrata.store.sql.host import SQLCore

_BY_NAME = f"SELECT {EP_COLS} FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "


class EpisodeRules(SQLCore):
    """Part of a SQL store: namespaces, episodes added and read, stats."""

    # the backend's hooks ----------------------------------------------------------------
    def _index_new(self, conn: Any, ns_id: int, docs: list[tuple[int, str]]) -> None:
        """Full-text entries for new episodes, as (key, index text)."""
        raise NotImplementedError

    def _after_add(self, namespace: str) -> None:
        """After an add committed."""

    # the rules --------------------------------------------------------------------------
    def _meta(self, key: str, default: str | None = None) -> str | None:
        read = self._sql("SELECT value FROM memstrata_meta WHERE key=?")
        if default is None:
            row = self._one(read, (key,))
        else:
            with self._write() as conn:
                conn.execute(
                    self._sql("INSERT INTO memstrata_meta VALUES (?, ?) ON CONFLICT DO NOTHING"),
                    (key, default),
                )
                row = conn.execute(read, (key,)).fetchone()
        return None if row is None else str(row[0])

    def namespaces(self) -> list[str]:
        order = f"name{self.dialect.bytewise}"
        return [r[0] for r in self._rows(f"SELECT name FROM namespaces ORDER BY {order}")]

    def has_namespace(self, namespace: str) -> bool:
        with self._lock:
            return self._ns_id(namespace) is not None

    def add_episodes(self, namespace: str, episodes: Sequence[PreparedEpisode]) -> AddReport:
        report = AddReport()
        if not episodes:
            return report
        with self._write() as conn:
            ns_id = self._create_ns(conn, namespace)
            row = conn.execute(
                self._sql("SELECT COALESCE(MAX(seq), 0) FROM episodes WHERE namespace_id=?"),
                (ns_id,),
            ).fetchone()
            seq = int(row[0]) if row else 0
            stamp = now()
            fresh: list[tuple[int, str]] = []
            speakers: list[str | None] = []
            insert = self._sql(
                "INSERT INTO episodes(namespace_id, external_id, seq, created_at, "
                f"{EPISODE_VALUES}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT (namespace_id, external_id) DO NOTHING RETURNING id"
            )
            for ep in episodes:
                added = conn.execute(
                    insert, (ns_id, ep.external_id, seq + 1, stamp, *episode_values(ep))
                ).fetchone()
                if added is None:
                    old = self._stored_episode(ns_id, ep.external_id)
                    same = old is not None and same_episode(ep, old)
                    (report.existing if same else report.conflicts).append(ep.external_id)
                    continue
                seq += 1
                fresh.append((int(added[0]), ep.index_text))
                report.added.append(ep.external_id)
                speakers.append(ep.speaker)
            self._index_new(conn, ns_id, fresh)
            self._count_speakers(conn, ns_id, added=speakers)
        self._after_add(namespace)
        return report

    def existing_ids(self, namespace: str, external_ids: Sequence[str]) -> set[str]:
        if not external_ids:
            return set()
        with self._lock:
            rows = self._in(
                self._conn,
                "SELECT e.external_id FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
                "WHERE n.name=? AND e.external_id {in_}",
                list(external_ids),
                lead=(namespace,),
            )
        return {r[0] for r in rows}

    def get_episodes(self, namespace: str, external_ids: Sequence[str]) -> list[Episode]:
        with self._lock:
            rows = self._in(
                self._conn,
                _BY_NAME + "WHERE n.name=? AND e.external_id {in_}",
                list(external_ids),
                lead=(namespace,),
            )
        out = {ep.id: ep for ep in map(episode, rows)}
        return [out[i] for i in external_ids if i in out]

    def _by_key(self, sql: str, keys: Sequence[int]) -> list[Any]:
        with self._lock:
            return self._in(self._conn, sql, [int(k) for k in keys])

    def episodes_by_key(self, keys: Sequence[int]) -> dict[int, Episode]:
        rows = self._by_key(_BY_NAME + "WHERE e.id {in_}", keys)
        return {int(row[0]): episode(row) for row in rows}

    def episode_meta(self, keys: Sequence[int]) -> dict[int, EpisodeMeta]:
        rows = self._by_key(
            "SELECT id, session, seq, speaker, occurred_ts FROM episodes WHERE id {in_}", keys
        )
        return {int(r[0]): EpisodeMeta(int(r[0]), r[1], int(r[2]), r[3], r[4]) for r in rows}

    def episode_texts(self, keys: Sequence[int]) -> dict[int, EpisodeText]:
        rows = self._by_key(
            "SELECT id, text, speaker, role, session, seq FROM episodes WHERE id {in_}", keys
        )
        return {int(r[0]): EpisodeText(int(r[0]), r[1], r[2], r[3], r[4], int(r[5])) for r in rows}

    def iter_episodes(self, namespace: str, after_key: int = 0, limit: int = 1000) -> list[Episode]:
        rows = self._rows(
            _BY_NAME + "WHERE n.name=? AND e.id>? ORDER BY e.id LIMIT ?",
            (namespace, after_key, limit),
        )
        return [episode(r) for r in rows]

    def stats(self, namespace: str | None = None) -> list[NamespaceStats]:
        with self._lock:
            names = [namespace] if namespace else self.namespaces()
            out = []
            for name in names:
                ns_id = self._ns_id(name)
                if ns_id is None:
                    continue
                episodes, embedded = self._row(
                    "SELECT COUNT(*), COUNT(embed_hash) FROM episodes WHERE namespace_id=?",
                    (ns_id,),
                )
                records: dict[str, int] = {}
                owned: dict[str, dict[str, int]] = {}
                for builder, kind, n in self._rows(
                    "SELECT builder, kind, COUNT(*) FROM records WHERE namespace_id=? "
                    "GROUP BY builder, kind ORDER BY builder, kind",
                    (ns_id,),
                ):
                    records[kind] = records.get(kind, 0) + int(n)
                    owned.setdefault(builder, {})[kind] = int(n)
                out.append(
                    NamespaceStats(
                        namespace=name,
                        episodes=int(episodes),
                        records=records,
                        records_by_builder=owned,
                        embedded=int(embedded),
                        builds=self._build_counts(ns_id),
                        repairs=self.repair_backlog(name),
                    )
                )
            return out
