"""The PostgreSQL store: the same contract as the SQLite one, for a shared server.

This module holds the connection, migrations, deletes of namespaces and episodes; the rest of
``PostgresStore`` lives in the rules both SQL stores share (``store/sql/``) and in parts
deriving from ``common.PostgresBase``, as on the SQLite side: ``search`` (embeddings,
BM25 over postings, pgvector), ``records`` (derived records and provenance), ``builds``
(the build queue), ``updates`` (the hooks of updates) and ``transfer`` (a namespace in,
for ``memstrata copy``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import psycopg

from memstrata.errors import StoreError
from memstrata.store.base import (
    DeleteReport,
    RemovedEpisode,
    Store,
)
from memstrata.store.postgres.builds import BuildBookkeeping
from memstrata.store.postgres.common import PostgresBase, connect, translate
from memstrata.store.postgres.erasure import Erasure
from memstrata.store.postgres.records import DerivedRecords
from memstrata.store.postgres.search import SearchPrimitives
from memstrata.store.postgres.transfer import Transfer
from memstrata.store.postgres.updates import EpisodeUpdates
from memstrata.store.sql.common import migrations
from memstrata.store.sql.episodes import EpisodeRules
from memstrata.store.sql.host import speak_store_errors
from memstrata.store.sql.jobs import Jobs
from memstrata.store.sql.keys import ApiKeys
from memstrata.store.sql.usage import LLMAccounting

#: the advisory lock that serialises migrations of one database across processes
MIGRATION_LOCK = 0x6D656D73  # "mems"


def _migrations() -> list[tuple[int, str]]:
    return migrations("postgres")


class PostgresStore(
    Erasure,
    Transfer,
    ApiKeys,
    Jobs,
    BuildBookkeeping,
    DerivedRecords,
    SearchPrimitives,
    EpisodeUpdates,
    LLMAccounting,
    EpisodeRules,
    PostgresBase,
    Store,
):
    """A memstrata database in PostgreSQL (``postgresql://user:pw@host:port/db``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.RLock()
        self._conn = connect(url)
        try:
            self._migrate()
            self._conn.execute("SET hnsw.iterative_scan = strict_order")
        except BaseException as exc:
            self._conn.close()
            if isinstance(exc, psycopg.Error):
                raise translate(exc, url) from exc
            raise

    # schema -----------------------------------------------------------------------------
    def _migrate(self) -> None:
        """Apply what is missing, under an advisory lock so two first opens take turns;
        the whole of it is one transaction, so a failure leaves nothing half-made.

        The lock is a session lock taken before the transaction: a transaction begun
        after another process's migration committed sees its tables (one begun before
        would not, its catalog view being older than the wait)."""
        conn = self._conn
        latest = _migrations()[-1][0]
        if self._read_version() == latest:
            return
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        try:
            with conn.transaction():
                self._migrate_locked(latest)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))

    def _migrate_locked(self, latest: int) -> None:
        conn = self._conn
        current = self._read_version()
        if current > latest:
            raise StoreError(
                f"the PostgreSQL store has schema version {current}, newer than this "
                f"memstrata understands ({latest}); upgrade memstrata"
            )
        if current == latest:
            return
        if current == 0:
            self._refuse_foreign()
            self._create_vector_extension()
        conn.execute("CREATE TABLE IF NOT EXISTS memstrata_meta (key text PRIMARY KEY, value text)")
        for version, sql in _migrations():
            if version > current:
                conn.execute(sql.encode())
                conn.execute(
                    "INSERT INTO memstrata_meta VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value=EXCLUDED.value",
                    (str(version),),
                )

    def _read_version(self) -> int:
        row = self._conn.execute("SELECT to_regclass('memstrata_meta')").fetchone()
        if row is None or row[0] is None:
            return 0
        found = self._conn.execute(
            "SELECT value FROM memstrata_meta WHERE key='schema_version'"
        ).fetchone()
        return int(found[0]) if found else 0

    def _refuse_foreign(self) -> None:
        """Leave other applications' schemas as they are."""
        row = self._conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() "
            "AND tablename = ANY(%s)",
            (["namespaces", "episodes", "records", "embeddings"],),
        ).fetchone()
        if row and row[0]:
            raise StoreError(
                f"{self.url.split('@')[-1]} already has tables of another application "
                "(namespaces, episodes…) but no memstrata schema; use another database"
            )

    def _create_vector_extension(self) -> None:
        conn = self._conn
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname='vector'").fetchone():
            return
        try:
            with conn.transaction():
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as exc:
            why = str(exc).strip().splitlines()[0]
            raise StoreError(
                "the PostgreSQL store needs the pgvector extension and could not create it "
                f"({why}); install pgvector on the server, or have a superuser run "
                "CREATE EXTENSION vector in this database"
            ) from exc

    def schema_version(self) -> int:
        with self._lock:
            return self._read_version()

    def _index_new(
        self, conn: psycopg.Connection[Any], ns_id: int, docs: list[tuple[int, str]]
    ) -> None:
        self._index_many(conn, ns_id, docs)

    # namespaces -------------------------------------------------------------------------
    def delete_namespace(self, namespace: str) -> int:
        with self._write() as conn:
            ns_id = self._lock_ns(conn, namespace)
            if ns_id is None:
                return 0
            (count,) = conn.execute(
                "SELECT count(*) FROM episodes WHERE namespace_id=%s", (ns_id,)
            ).fetchone() or (0,)
            own = [
                bytes(r[0])
                for r in conn.execute(
                    "SELECT embed_hash FROM episodes WHERE namespace_id=%s "
                    "AND embed_hash IS NOT NULL UNION SELECT embed_hash FROM episode_versions "
                    "WHERE namespace_id=%s AND embed_hash IS NOT NULL",
                    (ns_id, ns_id),
                )
            ]
            # children first: their own keys lead with the namespace, so each is one scan
            for table in (
                "job_episodes",
                "build_progress",
                "provenance",
                "record_links",
                "bm25_postings",
                "episode_versions",
                "records",
                "episodes",
            ):
                conn.execute(f"DELETE FROM {table} WHERE namespace_id=%s", (ns_id,))
            conn.execute("DELETE FROM namespaces WHERE id=%s", (ns_id,))
            # its texts' vectors, and those made for its designs, unless held elsewhere
            self._forget(conn, own, [ns_id], (), everything=True)
            return int(count)

    # episodes ---------------------------------------------------------------------------
    def speakers(self, namespace: str) -> list[str]:
        rows = self._all(  # kept as episodes are written (_count_speakers)
            "SELECT c.speaker FROM speaker_counts c JOIN namespaces n ON n.id=c.namespace_id "
            'WHERE n.name=%s ORDER BY c.n DESC, c.speaker COLLATE "C"',
            (namespace,),
        )
        return [r[0] for r in rows]

    def delete_episodes(self, namespace: str, external_ids: Sequence[str]) -> DeleteReport:
        with self._write() as conn:
            ns_id = self._lock_ns(conn, namespace)
            if ns_id is None:
                return DeleteReport(0, list(dict.fromkeys(external_ids)))
            found: dict[str, int] = {}
            removed: list[RemovedEpisode] = []
            for ext, key, text, speaker, session, seq in conn.execute(
                "SELECT external_id, id, text, speaker, session, seq FROM episodes "
                "WHERE namespace_id=%s AND external_id = ANY(%s) ORDER BY id",
                (ns_id, list(external_ids)),
            ).fetchall():
                found[ext] = key
                removed.append(
                    RemovedEpisode(
                        id=ext, text=text, speaker=speaker, session=session, seq=seq, key=key
                    )
                )
            keys = list(found.values())
            missing = [i for i in dict.fromkeys(external_ids) if i not in found]
            if not keys:
                return DeleteReport(0, missing)
            affected = {
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT record_id FROM provenance WHERE namespace_id=%s "
                    "AND episode_id = ANY(%s)",
                    (ns_id, keys),
                ).fetchall()
            }
            self._unindex(conn, ns_id, keys)
            conn.execute(
                "DELETE FROM episodes WHERE namespace_id=%s AND id = ANY(%s)", (ns_id, keys)
            )
            self._count_speakers(conn, ns_id, removed=[r.speaker for r in removed])
            self._follow_provenance(conn, ns_id, affected, removed)
            return DeleteReport(len(keys), missing)

    # stats ----------------------------------------------------------------------------
    def size_bytes(self) -> int:
        row = self._one("SELECT pg_database_size(current_database())")
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


# Every public method speaks StoreError, never a raw psycopg exception.
speak_store_errors(PostgresStore, psycopg.Error, translate)
