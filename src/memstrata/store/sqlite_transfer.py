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
    NamespaceDump,
    key_of,
)
from memstrata.store.sql.common import chunks as _chunks
from memstrata.store.sql.transfer import TransferRules
from memstrata.store.sqlite_base import SQLiteBase
from memstrata.store.sqlite_common import _fts


class Transfer(TransferRules, SQLiteBase):
    """Part of :class:`~memstrata.store.sqlite.SQLiteStore` (with ``sql.transfer``)."""

    _PROVENANCE_SQL = (
        'SELECT p.record_id, p.episode_id, p.start, p."end" FROM provenance p '
        "JOIN records r ON r.id=p.record_id WHERE r.namespace_id=?"
    )

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
        self._count_speakers(conn, ns_id, added=[ep.speaker for ep in dump.episodes])
        self._import_versions(conn, ns_id, dump, key)
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
