"""The PostgreSQL store's side of ``memstrata copy`` (as ``sqlite_transfer`` on SQLite).

An export reads in one REPEATABLE READ transaction (one snapshot of the namespace); an
import is one transaction, so a failure or a dropped connection leaves no trace of the
namespace. The BM25 postings are rebuilt from each episode's index text, in bulk.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from numpy.typing import NDArray

from memstrata.errors import StoreError
from memstrata.store.base import check_namespace
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
from memstrata.store.postgres.common import PostgresBase, count_speakers, masked
from memstrata.store.sql.common import KEY_COLS
from memstrata.store.sql.usage import CALL_COLS
from memstrata.store.tokenize import tokenize

_CALL_MARKS = ",".join(["%s"] * 18)


class Transfer(PostgresBase):
    """Part of :class:`~memstrata.store.postgres.store.PostgresStore`."""

    def export_namespace(self, namespace: str) -> NamespaceDump:
        with self._lock, self._conn.transaction():
            conn = self._conn
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            row = conn.execute(
                "SELECT id, created_at FROM namespaces WHERE name=%s", (namespace,)
            ).fetchone()
            if row is None:
                raise StoreError(f"{masked(self.url)} has no namespace {namespace!r}")
            ns = int(row[0])
            dump = NamespaceDump(namespace, row[1])
            ext: dict[int, str] = {}
            for r in conn.execute(
                "SELECT id, external_id, text, speaker, role, occurred_at, occurred_ts, session, "
                "seq, metadata, content_hash, embed_hash, created_at FROM episodes "
                "WHERE namespace_id=%s ORDER BY id",
                (ns,),
            ).fetchall():
                ext[int(r[0])] = r[1]
                dump.episodes.append(EpisodeRow(*r[1:]))
            dump.versions = [
                VersionRow(ext[r[0]], *r[1:])
                for r in conn.execute(
                    "SELECT episode_id, version, text, speaker, role, occurred_at, session, "
                    "metadata, content_hash, embed_hash, written_at, replaced_at "
                    "FROM episode_versions WHERE namespace_id=%s ORDER BY id",
                    (ns,),
                ).fetchall()
            ]
            dump.records = [
                RecordRow(*r)
                for r in conn.execute(
                    "SELECT id, kind, builder, data, created_at, updated_at FROM records "
                    "WHERE namespace_id=%s ORDER BY ord",
                    (ns,),
                ).fetchall()
            ]
            dump.links = [
                (r[0], r[1])
                for r in conn.execute(
                    "SELECT parent_id, child_id FROM record_links WHERE namespace_id=%s "
                    'ORDER BY parent_id COLLATE "C", child_id COLLATE "C"',
                    (ns,),
                ).fetchall()
            ]
            dump.provenance = sorted(
                (r[0], ext[r[1]], r[2], r[3])
                for r in conn.execute(
                    'SELECT record_id, episode_id, start, "end" FROM provenance '
                    "WHERE namespace_id=%s",
                    (ns,),
                ).fetchall()
            )
            dump.marks = [
                MarkRow(r[0], ext[r[1]], *r[2:])
                for r in conn.execute(
                    "SELECT builder, episode_id, status, updated_at, attempts, error, retry_at "
                    'FROM build_progress WHERE namespace_id=%s ORDER BY builder COLLATE "C", '
                    "episode_id",
                    (ns,),
                ).fetchall()
            ]
            dump.repairs = [
                RepairRow(r[0], r[1], r[2], neutral_repair(r[1], r[3]), r[4])
                for r in conn.execute(
                    "SELECT builder, what, ref, data, created_at FROM repairs "
                    "WHERE namespace_id=%s ORDER BY id",
                    (ns,),
                ).fetchall()
            ]
            for r in conn.execute(
                "SELECT key, id, kind, recipe, builders, episodes, created_at, created_ts "
                "FROM jobs WHERE namespace_id=%s ORDER BY key",
                (ns,),
            ).fetchall():
                members = conn.execute(
                    "SELECT episode_id FROM job_episodes WHERE namespace_id=%s AND job=%s "
                    "ORDER BY episode_id",
                    (ns, r[0]),
                ).fetchall()
                job = JobRow(r[1], r[2], r[3], r[4], r[5], r[6], r[7])
                job.members = [ext[m[0]] for m in members]
                dump.jobs.append(job)
            dump.calls = [
                CallRow(*r)
                for r in conn.execute(
                    f"SELECT {CALL_COLS} FROM llm_calls WHERE namespace=%s ORDER BY id",
                    (namespace,),
                ).fetchall()
            ]
        return dump

    def import_namespace(self, dump: NamespaceDump) -> None:
        with self._write() as conn:
            row = conn.execute(
                "INSERT INTO namespaces(name, created_at) VALUES (%s, %s) "
                "ON CONFLICT (name) DO NOTHING RETURNING id",
                (check_namespace(dump.name), dump.created_at),
            ).fetchone()
            if row is None:
                raise StoreError(f"{masked(self.url)} already has a namespace {dump.name!r}")
            ns = int(row[0])
            key = self._import_episodes(conn, ns, dump)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO episode_versions(namespace_id, episode_id, version, text, "
                    "speaker, role, occurred_at, session, metadata, content_hash, embed_hash, "
                    "written_at, replaced_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    [(ns, key_of(key, v.episode), *values(v)[1:]) for v in dump.versions],
                )
            self._import_records(conn, ns, dump, key)
            self._import_marks(conn, ns, dump, key)
            self._import_jobs(conn, ns, dump, key)

    @staticmethod
    def _import_episodes(
        conn: psycopg.Connection[Any], ns: int, dump: NamespaceDump
    ) -> dict[str, int]:
        """Episodes with their BM25 postings and totals, in a few round trips (what
        ``_index`` does one episode at a time); returns the keys they were given."""
        terms = [tokenize(ep.index_text) for ep in dump.episodes]
        key: dict[str, int] = {}
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO episodes(namespace_id, external_id, text, speaker, role, "
                "occurred_at, occurred_ts, session, seq, metadata, content_hash, embed_hash, "
                "created_at, index_len) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) "
                "RETURNING id",
                [
                    (ns, *values(ep)[:-1], len(t))
                    for ep, t in zip(dump.episodes, terms, strict=True)
                ],
                returning=True,
            )
            for ep in dump.episodes:
                got = cur.fetchone()
                assert got is not None
                key[ep.external_id] = int(got[0])
                cur.nextset()
            postings = []
            for ep, words in zip(dump.episodes, terms, strict=True):
                where: dict[str, list[int]] = {}
                for pos, term in enumerate(words):
                    where.setdefault(term, []).append(pos)
                postings += [(ns, t, key[ep.external_id], len(p), p) for t, p in where.items()]
            cur.executemany("INSERT INTO bm25_postings VALUES (%s,%s,%s,%s,%s)", postings)
        count_speakers(conn, ns, added=[ep.speaker for ep in dump.episodes])
        if dump.episodes:
            conn.execute(
                "INSERT INTO bm25_stats VALUES (%s, %s, %s)",
                (ns, len(dump.episodes), sum(len(t) for t in terms)),
            )
        return key

    @staticmethod
    def _import_records(
        conn: psycopg.Connection[Any], ns: int, dump: NamespaceDump, key: dict[str, int]
    ) -> None:
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO records(namespace_id, id, kind, builder, data, created_at, "
                "updated_at) VALUES (%s,%s,%s,%s,%s,%s,%s)",
                [(ns, *values(r)) for r in dump.records],
            )
            cur.executemany(
                "INSERT INTO record_links VALUES (%s,%s,%s)", [(ns, *link) for link in dump.links]
            )
            cur.executemany(
                'INSERT INTO provenance(namespace_id, record_id, episode_id, start, "end") '
                "VALUES (%s,%s,%s,%s,%s)",
                [(ns, rid, key_of(key, ep), a, b) for rid, ep, a, b in dump.provenance],
            )

    @staticmethod
    def _import_marks(
        conn: psycopg.Connection[Any], ns: int, dump: NamespaceDump, key: dict[str, int]
    ) -> None:
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO build_progress(namespace_id, builder, episode_id, status, "
                "updated_at, attempts, error, retry_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s)",
                [(ns, m.builder, key_of(key, m.episode), *values(m)[2:]) for m in dump.marks],
            )
            cur.executemany(
                "INSERT INTO repairs(namespace_id, builder, what, ref, data, created_at) "
                "VALUES (%s,%s,%s,%s,%s,%s)",
                [
                    (ns, r.builder, r.what, r.ref, keyed_repair(r.what, r.data, key), r.created_at)
                    for r in dump.repairs
                ],
            )

    def _import_jobs(
        self, conn: psycopg.Connection[Any], ns: int, dump: NamespaceDump, key: dict[str, int]
    ) -> None:
        for job in dump.jobs:
            got = conn.execute(
                "INSERT INTO jobs(namespace_id, id, kind, recipe, builders, episodes, "
                "created_at, created_ts) VALUES (%s,%s,%s,%s,%s,%s,%s,%s) "
                "ON CONFLICT (id) DO NOTHING RETURNING key",
                (ns, *values(job)[:7]),
            ).fetchone()
            if got is None:
                raise StoreError(
                    f"job {job.id} of namespace {dump.name!r} is already in {masked(self.url)}"
                )
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO job_episodes VALUES (%s,%s,%s)",
                    [(ns, got[0], key_of(key, m)) for m in job.members],
                )
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO llm_calls({CALL_COLS}) VALUES ({_CALL_MARKS})",
                [values(c) for c in dump.calls],
            )

    def export_globals(self) -> GlobalDump:
        with self._lock, self._conn.transaction():
            conn = self._conn
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
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
        keys = calls = 0
        with self._write() as conn:
            for k in dump.keys:
                cur = conn.execute(
                    f"INSERT INTO api_keys({KEY_COLS}) VALUES ({','.join(['%s'] * 9)}) "
                    "ON CONFLICT (hash) DO NOTHING",
                    values(k),
                )
                keys += cur.rowcount
            for c in dump.calls:
                if conn.execute(
                    "SELECT 1 FROM llm_calls WHERE namespace IS NOT DISTINCT FROM %s "
                    "AND stage=%s AND request_hash=%s AND created_at=%s",
                    (c.namespace, c.stage, c.request_hash, c.created_at),
                ).fetchone():
                    continue
                conn.execute(
                    f"INSERT INTO llm_calls({CALL_COLS}) VALUES ({_CALL_MARKS})", values(c)
                )
                calls += 1
        return keys, calls

    def iter_embeddings(
        self, after: tuple[str, bytes] | None = None, limit: int = 1000
    ) -> list[tuple[str, bytes, NDArray[np.float32]]]:
        model, digest = after or ("", b"")
        rows = self._all(
            'SELECT model, hash, vec::text FROM embeddings WHERE model COLLATE "C" > %s '
            'OR (model=%s AND hash>%s) ORDER BY model COLLATE "C", hash LIMIT %s',
            (model, model, digest, limit),
        )
        return [
            (m, bytes(h), np.array(text[1:-1].split(","), dtype=np.float32)) for m, h, text in rows
        ]
