"""Erasure on PostgreSQL: vectors no stored text needs, and ``vacuum``, the explicit step
after which a delete leaves no byte of the text in the server's files.

A DELETE only marks a row dead. Until the table is rewritten its bytes stay in the heap
and index pages (a plain VACUUM frees the space for reuse but does not clear it), in the
TOAST table of a long text, in ``pg_statistic`` if ANALYZE sampled it, and in the WAL
segments that logged the insert and the delete. ``vacuum`` rewrites memstrata's tables
with their indexes (``VACUUM (FULL, ANALYZE)``), then ``pg_statistic``, then switches to
a new WAL segment and checkpoints, so the server removes the older segments, provided it
does not recycle them (``wal_recycle = off``, the setting of the server ``memstrata pg
start`` runs) nor keep them for archiving, replication or ``wal_keep_size``. It locks
each table while rewriting it: run it when deletes call for it (docs/postgres.md).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import psycopg

from memstrata.store.erasing import UNKNOWN_WORDS, probe_words
from memstrata.store.postgres.common import PostgresBase, connect
from memstrata.store.reports import VERSION_COLS, EpisodeVersion, version_of


class Erasure(PostgresBase):
    """Part of :class:`~memstrata.store.postgres.store.PostgresStore`."""

    def forget_embeddings(
        self,
        hashes: Sequence[bytes],
        *,
        namespace: str | None = None,
        words: Collection[int] = (),
        everything: bool = False,
    ) -> int:
        with self._write() as conn:
            ns_id = self._ns_id(namespace) if namespace is not None else None
            scopes = [0] if ns_id is None else [0, ns_id]
            return forget(conn, list(hashes), scopes, words, everything)

    def redact_errors(
        self, namespace: str, words: Collection[str], redact: Callable[[str], str | None]
    ) -> int:
        probe = probe_words(words)
        where = "" if probe is None else " AND lower(error) LIKE ANY(%s)"
        likes = [] if probe is None else [[f"%{_like(w)}%" for w in probe]]
        # read first: most deletes find nothing to rewrite
        calls = self._all(
            "SELECT id, error FROM llm_calls WHERE error IS NOT NULL "
            f"AND (namespace=%s OR namespace IS NULL){where}",
            (namespace, *likes),
        )
        ns_id = self._ns_id(namespace)
        marks = self._all(
            "SELECT builder, episode_id, error FROM build_progress WHERE namespace_id=%s "
            f"AND error IS NOT NULL{where}",
            (ns_id, *likes),
        )
        calls = sorted((key, new) for key, text in calls if (new := redact(text)) is not None)
        marks = sorted((b, e, new) for b, e, text in marks if (new := redact(text)) is not None)
        if calls or marks:
            with self._write() as conn, conn.cursor() as cur:
                cur.executemany(
                    "UPDATE llm_calls SET error=%s WHERE id=%s", [(n, k) for k, n in calls]
                )
                cur.executemany(
                    "UPDATE build_progress SET error=%s WHERE namespace_id=%s AND builder=%s "
                    "AND episode_id=%s",
                    [(n, ns_id, b, e) for b, e, n in marks],
                )
        return len(calls) + len(marks)

    def namespace_versions(self, namespace: str) -> list[EpisodeVersion]:
        rows = self._all(
            f"SELECT e.external_id, {VERSION_COLS} FROM episode_versions v JOIN episodes e "
            "ON e.namespace_id=v.namespace_id AND e.id=v.episode_id JOIN namespaces n "
            "ON n.id=v.namespace_id WHERE n.name=%s AND length(v.content_hash) > 0 "
            "ORDER BY v.id",
            (namespace,),
        )
        return [version_of(namespace, r) for r in rows]

    def scrub(self) -> bool:
        """Nothing is done here: dead rows stay until :meth:`vacuum` (see the module)."""
        return False

    def vacuum(self) -> dict[str, Any]:
        """Rewrite memstrata's tables and the planner's statistics, then retire the WAL
        that logged the removed rows. Says what it did and what it could not (a step
        that needs a superuser, a WAL the server keeps)."""
        report: dict[str, Any] = {"tables": [], "statistics": False, "wal": "kept"}
        with self._lock, connect(self.url) as conn:
            conn.autocommit = True
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                    "ORDER BY tablename"
                ).fetchall()
            ]
            for table in tables:
                conn.execute(f'VACUUM (FULL, ANALYZE) "{table}"')
                report["tables"].append(table)
            row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            superuser = bool((row.fetchone() or [False])[0])
            if not superuser:
                report["wal"] = "kept: pg_statistic and the WAL need a superuser"
                return report
            conn.execute("VACUUM FULL pg_catalog.pg_statistic")
            report["statistics"] = True
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_switch_wal()")
            conn.execute("CHECKPOINT")
            keeps = _wal_keepers(conn)
            report["wal"] = "retired" if not keeps else "kept: " + "; ".join(keeps)
        return report


def _wal_keepers(conn: Any) -> list[str]:
    """Settings under which the server keeps or reuses old WAL segments."""
    why: list[str] = []
    if conn.execute("SHOW wal_recycle").fetchone()[0] == "on":
        why.append("wal_recycle is on (old segments are renamed for reuse, not removed)")
    if conn.execute("SHOW archive_mode").fetchone()[0] != "off":
        why.append("archive_mode keeps segments until archived (and the archive keeps them)")
    if conn.execute("SHOW wal_keep_size").fetchone()[0] not in ("0", "0MB", "0kB"):
        why.append("wal_keep_size keeps recent segments")
    slots = conn.execute("SELECT count(*) FROM pg_replication_slots").fetchone()[0]
    if slots:
        why.append(f"{slots} replication slot(s) hold segments")
    return why


def _like(word: str) -> str:
    """``word`` as a literal inside a LIKE pattern."""
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def forget(
    conn: psycopg.Connection[Any],
    hashes: list[bytes],
    scopes: list[int],
    words: Collection[int],
    everything: bool,
) -> int:
    """``forget_embeddings`` in the caller's transaction, over the filings of the
    namespace ids ``scopes`` (in hash order: concurrent deletes lock rows alike)."""
    which = "" if everything else " AND term = ANY(%s)"
    keys = [] if everything else [sorted({*words, UNKNOWN_WORDS})]
    found = [
        bytes(r[0])
        for r in conn.execute(
            f"SELECT DISTINCT hash FROM embedding_terms WHERE namespace_id = ANY(%s){which} "
            "ORDER BY hash",
            (scopes, *keys),
        )
    ]
    if found:
        conn.execute(
            "DELETE FROM embedding_terms WHERE namespace_id = ANY(%s) AND hash = ANY(%s)",
            (scopes, found),
        )
    wanted = sorted(set(hashes) | set(found))
    if not wanted:
        return 0
    cur = conn.execute(
        "DELETE FROM embeddings m WHERE m.hash = ANY(%s) "
        "AND NOT EXISTS (SELECT 1 FROM episodes e WHERE e.embed_hash = m.hash) "
        "AND NOT EXISTS (SELECT 1 FROM episode_versions v WHERE v.embed_hash = m.hash) "
        "AND NOT EXISTS (SELECT 1 FROM embedding_terms t WHERE t.hash = m.hash)",
        (wanted,),
    )
    return int(cur.rowcount)
