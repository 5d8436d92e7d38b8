"""The SQLite store's side of ``memstrata copy``: a namespace out as a dump, and in.

An export reads in one read transaction (a snapshot: a writer meanwhile is not half
seen); an import is one write transaction, so a failure or a kill leaves no trace of the
namespace. Episode keys are mapped through external ids both ways (see :mod:`.dump`).
"""

from __future__ import annotations

import sqlite3

import numpy as np
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
from memstrata.store.sql.common import KEY_COLS
from memstrata.store.sql.common import chunks as _chunks
from memstrata.store.sql.usage import CALL_COLS
from memstrata.store.sqlite_base import SQLiteBase
from memstrata.store.sqlite_common import _count_speakers, _fts


class Transfer(SQLiteBase):
    """Part of :class:`~memstrata.store.sqlite.SQLiteStore`."""

    def export_namespace(self, namespace: str) -> NamespaceDump:
        with self._snapshot() as conn:
            row = conn.execute(
                "SELECT id, created_at FROM namespaces WHERE name=?", (namespace,)
            ).fetchone()
            if row is None:
                raise StoreError(f"{self.path} has no namespace {namespace!r}")
            ns_id = int(row[0])
            dump = NamespaceDump(namespace, row[1])
            ext: dict[int, str] = {}
            for r in conn.execute(
                "SELECT id, external_id, text, speaker, role, occurred_at, occurred_ts, session, "
                "seq, metadata, content_hash, embed_hash, created_at FROM episodes "
                "WHERE namespace_id=? ORDER BY id",
                (ns_id,),
            ):
                ext[r[0]] = r[1]
                dump.episodes.append(EpisodeRow(*r[1:]))
            dump.versions = [
                VersionRow(ext[r[0]], *r[1:])
                for r in conn.execute(
                    "SELECT episode_id, version, text, speaker, role, occurred_at, session, "
                    "metadata, content_hash, embed_hash, written_at, replaced_at "
                    "FROM episode_versions WHERE namespace_id=? ORDER BY id",
                    (ns_id,),
                )
            ]
            dump.records = [
                RecordRow(*r)
                for r in conn.execute(
                    "SELECT id, kind, builder, data, created_at, updated_at FROM records "
                    "WHERE namespace_id=? ORDER BY rowid",
                    (ns_id,),
                )
            ]
            dump.links = [
                (r[0], r[1])
                for r in conn.execute(
                    "SELECT l.parent_id, l.child_id FROM record_links l JOIN records r "
                    "ON r.id=l.parent_id WHERE r.namespace_id=? ORDER BY 1, 2",
                    (ns_id,),
                )
            ]
            dump.provenance = sorted(
                (r[0], ext[r[1]], r[2], r[3])
                for r in conn.execute(
                    'SELECT p.record_id, p.episode_id, p.start, p."end" FROM provenance p '
                    "JOIN records r ON r.id=p.record_id WHERE r.namespace_id=?",
                    (ns_id,),
                )
            )
            dump.marks = [
                MarkRow(r[0], ext[r[1]], *r[2:])
                for r in conn.execute(
                    "SELECT builder, episode_id, status, updated_at, attempts, error, retry_at "
                    "FROM build_progress WHERE namespace_id=? ORDER BY builder, episode_id",
                    (ns_id,),
                )
            ]
            dump.repairs = [
                RepairRow(r[0], r[1], r[2], neutral_repair(r[1], r[3]), r[4])
                for r in conn.execute(
                    "SELECT builder, what, ref, data, created_at FROM repairs "
                    "WHERE namespace_id=? ORDER BY id",
                    (ns_id,),
                )
            ]
            for r in conn.execute(
                "SELECT key, id, kind, recipe, builders, episodes, created_at, created_ts "
                "FROM jobs WHERE namespace_id=? ORDER BY key",
                (ns_id,),
            ).fetchall():
                members = conn.execute(
                    "SELECT episode_id FROM job_episodes WHERE job=? ORDER BY episode_id", (r[0],)
                )
                job = JobRow(r[1], r[2], r[3], r[4], r[5], r[6], r[7])
                job.members = [ext[m[0]] for m in members]
                dump.jobs.append(job)
            dump.calls = [
                CallRow(*r)
                for r in conn.execute(
                    f"SELECT {CALL_COLS} FROM llm_calls WHERE namespace=? ORDER BY id", (namespace,)
                )
            ]
        return dump

    def import_namespace(self, dump: NamespaceDump) -> None:
        try:
            with self._write() as conn:
                conn.execute("PRAGMA defer_foreign_keys=ON")
                self._import(conn, dump)
        finally:
            self._ns_ids.pop(dump.name, None)  # never cache an id a rollback took back
        self.mark_written(dump.name)

    def _import(self, conn: sqlite3.Connection, dump: NamespaceDump) -> None:
        if conn.execute("SELECT 1 FROM namespaces WHERE name=?", (dump.name,)).fetchone():
            raise StoreError(f"{self.path} already has a namespace {dump.name!r}")
        cur = conn.execute(
            "INSERT INTO namespaces(name, created_at) VALUES (?, ?)",
            (check_namespace(dump.name), dump.created_at),
        )
        ns_id = int(cur.lastrowid or 0)
        conn.execute(
            f"CREATE VIRTUAL TABLE {_fts(ns_id)} USING fts5(body, "
            "tokenize='porter unicode61 remove_diacritics 2')"
        )
        key: dict[str, int] = {}
        for ep in dump.episodes:
            cur = conn.execute(
                "INSERT INTO episodes(namespace_id, external_id, text, speaker, role, "
                "occurred_at, occurred_ts, session, seq, metadata, content_hash, embed_hash, "
                "created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    ns_id,
                    ep.external_id,
                    ep.text,
                    ep.speaker,
                    ep.role,
                    ep.occurred_at,
                    ep.occurred_ts,
                    ep.session,
                    ep.seq,
                    ep.metadata,
                    ep.content_hash,
                    ep.embed_hash,
                    ep.created_at,
                ),
            )
            key[ep.external_id] = int(cur.lastrowid or 0)
            conn.execute(
                f"INSERT INTO {_fts(ns_id)}(rowid, body) VALUES (?, ?)",
                (key[ep.external_id], ep.index_text),
            )
        _count_speakers(conn, ns_id, added=[ep.speaker for ep in dump.episodes])
        conn.executemany(
            "INSERT INTO episode_versions(namespace_id, episode_id, version, text, speaker, "
            "role, occurred_at, session, metadata, content_hash, embed_hash, written_at, "
            "replaced_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(ns_id, key_of(key, v.episode), *values(v)[1:]) for v in dump.versions],
        )
        self._import_records(conn, ns_id, dump, key)
        self._import_marks(conn, ns_id, dump, key)
        self._import_jobs(conn, ns_id, dump, key)

    def _import_records(
        self, conn: sqlite3.Connection, ns_id: int, dump: NamespaceDump, key: dict[str, int]
    ) -> None:
        ids = [r.id for r in dump.records]
        for chunk in _chunks(ids, 500):
            taken = conn.execute(
                f"SELECT r.id, n.name FROM records r JOIN namespaces n ON n.id=r.namespace_id "
                f"WHERE r.id IN ({','.join('?' * len(chunk))}) LIMIT 1",
                tuple(chunk),
            ).fetchone()
            if taken is not None:
                raise StoreError(
                    f"record {taken[0]} of namespace {dump.name!r} is already in namespace "
                    f"{taken[1]!r} of {self.path} (an SQLite store's record ids are unique "
                    "across namespaces)"
                )
        for rec in dump.records:
            conn.execute(
                "INSERT INTO records(id, namespace_id, kind, data, created_at, updated_at, "
                "builder) VALUES (?,?,?,?,?,?,?)",
                (rec.id, ns_id, rec.kind, rec.data, rec.created_at, rec.updated_at, rec.builder),
            )
        conn.executemany(
            "INSERT OR IGNORE INTO record_links VALUES (?,?,?)",
            [(ns_id, parent, child) for parent, child in dump.links],
        )
        conn.executemany(
            "INSERT INTO provenance VALUES (?,?,?,?)",
            [(rid, key_of(key, ep), start, end) for rid, ep, start, end in dump.provenance],
        )

    def _import_marks(
        self, conn: sqlite3.Connection, ns_id: int, dump: NamespaceDump, key: dict[str, int]
    ) -> None:
        conn.executemany(
            "INSERT INTO build_progress(namespace_id, builder, episode_id, status, updated_at, "
            "attempts, error, retry_at) VALUES (?,?,?,?,?,?,?,?)",
            [(ns_id, m.builder, key_of(key, m.episode), *values(m)[2:]) for m in dump.marks],
        )
        conn.executemany(
            "INSERT INTO repairs(namespace_id, builder, what, ref, data, created_at) "
            "VALUES (?,?,?,?,?,?)",
            [
                (ns_id, r.builder, r.what, r.ref, keyed_repair(r.what, r.data, key), r.created_at)
                for r in dump.repairs
            ],
        )

    def _import_jobs(
        self, conn: sqlite3.Connection, ns_id: int, dump: NamespaceDump, key: dict[str, int]
    ) -> None:
        for job in dump.jobs:
            if conn.execute("SELECT 1 FROM jobs WHERE id=?", (job.id,)).fetchone():
                raise StoreError(
                    f"job {job.id} of namespace {dump.name!r} is already in {self.path}"
                )
            cur = conn.execute(
                "INSERT INTO jobs(id, namespace_id, kind, recipe, builders, episodes, "
                "created_at, created_ts) VALUES (?,?,?,?,?,?,?,?)",
                (job.id, ns_id, *values(job)[1:7]),
            )
            conn.executemany(
                "INSERT INTO job_episodes(namespace_id, job, episode_id) VALUES (?, ?, ?)",
                [(ns_id, cur.lastrowid, key_of(key, m)) for m in job.members],
            )
        conn.executemany(
            f"INSERT INTO llm_calls({CALL_COLS}) VALUES ({','.join('?' * 18)})",
            [values(c) for c in dump.calls],
        )

    def export_globals(self) -> GlobalDump:
        with self._snapshot() as conn:
            keys = [
                KeyRow(*r) for r in conn.execute(f"SELECT {KEY_COLS} FROM api_keys ORDER BY id")
            ]
            calls = [
                CallRow(*r)
                for r in conn.execute(
                    f"SELECT {CALL_COLS} FROM llm_calls WHERE namespace IS NULL OR namespace "
                    "NOT IN (SELECT name FROM namespaces) ORDER BY id"
                )
            ]
        return GlobalDump(keys, calls)

    def import_globals(self, dump: GlobalDump) -> tuple[int, int]:
        keys = calls = 0
        with self._write() as conn:
            for k in dump.keys:
                cur = conn.execute(
                    f"INSERT OR IGNORE INTO api_keys({KEY_COLS}) VALUES ({','.join('?' * 9)})",
                    values(k),
                )
                keys += cur.rowcount
            for c in dump.calls:
                if conn.execute(
                    "SELECT 1 FROM llm_calls WHERE namespace IS ? AND stage=? "
                    "AND request_hash=? AND created_at=?",
                    (c.namespace, c.stage, c.request_hash, c.created_at),
                ).fetchone():
                    continue
                conn.execute(
                    f"INSERT INTO llm_calls({CALL_COLS}) VALUES ({','.join('?' * 18)})",
                    values(c),
                )
                calls += 1
        return keys, calls

    def iter_embeddings(
        self, after: tuple[str, bytes] | None = None, limit: int = 1000
    ) -> list[tuple[str, bytes, NDArray[np.float32]]]:
        model, digest = after or ("", b"")
        with self._lock:
            rows = self._conn.execute(
                "SELECT model, hash, vec FROM embeddings WHERE model>? OR (model=? AND hash>?) "
                "ORDER BY model, hash LIMIT ?",
                (model, model, digest, limit),
            ).fetchall()
        return [
            (m, bytes(h), np.frombuffer(v, dtype=np.float16).astype(np.float32)) for m, h, v in rows
        ]
