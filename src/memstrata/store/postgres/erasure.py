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

from typing import Any

from memstrata.store.postgres.common import PostgresBase, connect
from memstrata.store.sql.erasure import ErasureRules


class Erasure(ErasureRules, PostgresBase):
    """Part of :class:`~memstrata.store.postgres.store.PostgresStore` (with
    ``sql.erasure``)."""

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
