"""``memstrata copy``'s rules both SQL stores share: what a namespace's dump holds and in
which order, the store-wide rows (API keys, calls of no namespace), and the writes of an
import that do not depend on how a backend indexes text.

An export reads in one snapshot (a writer meanwhile is not half seen); an import is one
write transaction, so a failure leaves no trace of the namespace. Episode keys are mapped
through external ids both ways (see :mod:`memstrata.store.dump`).
"""

from __future__ import annotations

from typing import Any

from memstrata.errors import StoreError
from memstrata.store.dump import (
    CallRow,
    EpisodeRow,
    GlobalDump,
    JobRow,
    KeyRow,
    MarkRow,
    NamespaceDump,
    RecordRow,
    RepairRow,
    VersionRow,
    key_of,
    keyed_repair,
    neutral_repair,
    values,
)
from memstrata.store.sql.common import KEY_COLS
from memstrata.store.sql.host import SQLCore
from memstrata.store.sql.usage import CALL_COLS

_CALL_MARKS = ",".join("?" * 18)


class TransferRules(SQLCore):
    """Part of a SQL store: a namespace out as a dump, the store-wide rows out and in."""

    #: the provenance rows of namespace ``?`` (record, episode key, start, end)
    _PROVENANCE_SQL: str

    def export_namespace(self, namespace: str) -> NamespaceDump:
        bytewise, q = self.dialect.bytewise, self._sql
        with self._snapshot() as conn:
            row = conn.execute(
                q("SELECT id, created_at FROM namespaces WHERE name=?"), (namespace,)
            ).fetchone()
            if row is None:
                raise StoreError(f"{self._shown} has no namespace {namespace!r}")
            ns = (int(row[0]),)
            dump = NamespaceDump(namespace, row[1])
            ext: dict[int, str] = {}
            for r in conn.execute(
                q(
                    "SELECT id, external_id, text, speaker, role, occurred_at, occurred_ts, "
                    "session, seq, metadata, content_hash, embed_hash, created_at FROM episodes "
                    "WHERE namespace_id=? ORDER BY id"
                ),
                ns,
            ).fetchall():
                ext[int(r[0])] = r[1]
                dump.episodes.append(EpisodeRow(*r[1:]))
            rows = lambda sql: conn.execute(q(sql), ns).fetchall()  # noqa: E731
            dump.versions = [
                VersionRow(ext[r[0]], *r[1:])
                for r in rows(
                    "SELECT episode_id, version, text, speaker, role, occurred_at, session, "
                    "metadata, content_hash, embed_hash, written_at, replaced_at "
                    "FROM episode_versions WHERE namespace_id=? ORDER BY id"
                )
            ]
            dump.records = [
                RecordRow(*r)
                for r in rows(
                    "SELECT id, kind, builder, data, created_at, updated_at FROM records "
                    f"WHERE namespace_id=? ORDER BY {self.dialect.record_order}"
                )
            ]
            dump.links = [
                (r[0], r[1])
                for r in rows(
                    "SELECT parent_id, child_id FROM record_links WHERE namespace_id=? "
                    f"ORDER BY parent_id{bytewise}, child_id{bytewise}"
                )
            ]
            dump.provenance = sorted(
                (r[0], ext[r[1]], r[2], r[3]) for r in rows(self._PROVENANCE_SQL)
            )
            dump.marks = [
                MarkRow(r[0], ext[r[1]], *r[2:])
                for r in rows(
                    "SELECT builder, episode_id, status, updated_at, attempts, error, retry_at "
                    f"FROM build_progress WHERE namespace_id=? ORDER BY builder{bytewise}, "
                    "episode_id"
                )
            ]
            dump.repairs = [
                RepairRow(r[0], r[1], r[2], neutral_repair(r[1], r[3]), r[4])
                for r in rows(
                    "SELECT builder, what, ref, data, created_at FROM repairs "
                    "WHERE namespace_id=? ORDER BY id"
                )
            ]
            self._export_jobs(conn, ns[0], ext, dump)
        return dump

    def _export_jobs(self, conn: Any, ns_id: int, ext: dict[int, str], dump: NamespaceDump) -> None:
        """The namespace's jobs with their members, and its LLM calls, into ``dump``."""
        q = self._sql
        for r in conn.execute(
            q(
                "SELECT key, id, kind, recipe, builders, episodes, created_at, created_ts "
                "FROM jobs WHERE namespace_id=? ORDER BY key"
            ),
            (ns_id,),
        ).fetchall():
            members = conn.execute(
                q(
                    "SELECT episode_id FROM job_episodes WHERE namespace_id=? AND job=? "
                    "ORDER BY episode_id"
                ),
                (ns_id, r[0]),
            ).fetchall()
            job = JobRow(r[1], r[2], r[3], r[4], r[5], r[6], r[7])
            job.members = [ext[m[0]] for m in members]
            dump.jobs.append(job)
        dump.calls = [
            CallRow(*r)
            for r in conn.execute(
                q(f"SELECT {CALL_COLS} FROM llm_calls WHERE namespace=? ORDER BY id"),
                (dump.name,),
            ).fetchall()
        ]

    @classmethod
    def _many(cls, conn: Any, sql: str, rows: list[Any]) -> None:
        conn.cursor().executemany(cls.dialect.sql(sql), rows)

    @classmethod
    def _import_versions(cls, conn: Any, ns: int, dump: NamespaceDump, key: dict[str, int]) -> None:
        cls._many(
            conn,
            "INSERT INTO episode_versions(namespace_id, episode_id, version, text, speaker, "
            "role, occurred_at, session, metadata, content_hash, embed_hash, written_at, "
            "replaced_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(ns, key_of(key, v.episode), *values(v)[1:]) for v in dump.versions],
        )

    @classmethod
    def _import_marks(cls, conn: Any, ns: int, dump: NamespaceDump, key: dict[str, int]) -> None:
        cls._many(
            conn,
            "INSERT INTO build_progress(namespace_id, builder, episode_id, status, updated_at, "
            "attempts, error, retry_at) VALUES (?,?,?,?,?,?,?,?)",
            [(ns, m.builder, key_of(key, m.episode), *values(m)[2:]) for m in dump.marks],
        )
        cls._many(
            conn,
            "INSERT INTO repairs(namespace_id, builder, what, ref, data, created_at) "
            "VALUES (?,?,?,?,?,?)",
            [
                (ns, r.builder, r.what, r.ref, keyed_repair(r.what, r.data, key), r.created_at)
                for r in dump.repairs
            ],
        )

    def _import_jobs(self, conn: Any, ns: int, dump: NamespaceDump, key: dict[str, int]) -> None:
        for job in dump.jobs:
            got = conn.execute(
                self._sql(
                    "INSERT INTO jobs(namespace_id, id, kind, recipe, builders, episodes, "
                    "created_at, created_ts) VALUES (?,?,?,?,?,?,?,?) "
                    "ON CONFLICT (id) DO NOTHING RETURNING key"
                ),
                (ns, *values(job)[:7]),
            ).fetchone()
            if got is None:
                raise StoreError(
                    f"job {job.id} of namespace {dump.name!r} is already in {self._shown}"
                )
            self._many(
                conn,
                "INSERT INTO job_episodes(namespace_id, job, episode_id) VALUES (?,?,?)",
                [(ns, got[0], key_of(key, m)) for m in job.members],
            )
        self._many(
            conn,
            f"INSERT INTO llm_calls({CALL_COLS}) VALUES ({_CALL_MARKS})",
            [values(c) for c in dump.calls],
        )

    def export_globals(self) -> GlobalDump:
        with self._snapshot() as conn:
            keys = [
                KeyRow(*r)
                for r in conn.execute(f"SELECT {KEY_COLS} FROM api_keys ORDER BY id").fetchall()
            ]
            calls = [
                CallRow(*r)
                for r in conn.execute(
                    f"SELECT {CALL_COLS} FROM llm_calls WHERE namespace IS NULL OR namespace "
                    "NOT IN (SELECT name FROM namespaces) ORDER BY id"
                ).fetchall()
            ]
        return GlobalDump(keys, calls)

    def import_globals(self, dump: GlobalDump) -> tuple[int, int]:
        """Keys the target lacks (by hash) and calls it lacks (by namespace, stage, request
        and time); returns how many of each were written."""
        keys = calls = 0
        with self._write() as conn:
            for k in dump.keys:
                cur = conn.execute(
                    self._sql(
                        f"INSERT INTO api_keys({KEY_COLS}) VALUES ({','.join('?' * 9)}) "
                        "ON CONFLICT (hash) DO NOTHING"
                    ),
                    values(k),
                )
                keys += cur.rowcount
            for c in dump.calls:
                if conn.execute(
                    self._sql(
                        "SELECT 1 FROM llm_calls WHERE namespace IS NOT DISTINCT FROM ? "
                        "AND stage=? AND request_hash=? AND created_at=?"
                    ),
                    (c.namespace, c.stage, c.request_hash, c.created_at),
                ).fetchone():
                    continue
                conn.execute(
                    self._sql(f"INSERT INTO llm_calls({CALL_COLS}) VALUES ({_CALL_MARKS})"),
                    values(c),
                )
                calls += 1
        return keys, calls
