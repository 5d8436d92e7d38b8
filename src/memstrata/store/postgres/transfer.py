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
    NamespaceDump,
    key_of,
    values,
)
from memstrata.store.postgres.common import PostgresBase, masked
from memstrata.store.sql.transfer import TransferRules
from memstrata.store.tokenize import tokenize

_CALL_MARKS = ",".join(["%s"] * 18)


class Transfer(TransferRules, PostgresBase):
    """Part of :class:`~memstrata.store.postgres.store.PostgresStore` (with
    ``sql.transfer``)."""

    _PROVENANCE_SQL = (
        'SELECT record_id, episode_id, start, "end" FROM provenance WHERE namespace_id=?'
    )

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
            self._import_versions(conn, ns, dump, key)
            self._import_records(conn, ns, dump, key)
            self._import_marks(conn, ns, dump, key)
            self._import_jobs(conn, ns, dump, key)

    def _import_episodes(
        self, conn: psycopg.Connection[Any], ns: int, dump: NamespaceDump
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
        self._count_speakers(conn, ns, added=[ep.speaker for ep in dump.episodes])
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
