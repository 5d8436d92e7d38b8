"""Connection plumbing of the PostgreSQL store: opening, errors in words, the base mixin."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg

from memstrata.errors import StoreClosedError, StoreError
from memstrata.models import Episode
from memstrata.redact import redact
from memstrata.store.sqlite_common import speaker_deltas

CONNECT_TIMEOUT_S = 10

EP_COLS = (
    "e.id, n.name, e.external_id, e.text, e.speaker, e.role, e.occurred_at, e.session, "
    "e.seq, e.metadata, e.created_at"
)


def masked(url: str) -> str:
    """``url`` without its password, for messages."""
    return redact(url)


def translate(exc: psycopg.Error, url: str) -> StoreError:
    """psycopg's errors as one line a user can act on."""
    where = masked(url)
    lines = [ln.strip() for ln in redact(str(exc)).strip().splitlines() if ln.strip()]
    text = lines[0] if lines else type(exc).__name__
    if isinstance(exc, psycopg.InterfaceError) or "connection is closed" in text:
        return StoreClosedError(where)
    if isinstance(exc, psycopg.errors.IntegrityError):
        return StoreError(f"{where}: write refused by a consistency rule ({text})")
    return StoreError(f"{where}: {text}")


def connect(url: str) -> psycopg.Connection[Any]:
    """An autocommit connection (transactions are explicit), or a one-line StoreError
    naming the cause: server unreachable, credentials refused, no such database."""
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.Error as exc:
        text = " ".join(redact(str(exc)).split())
        where = masked(url)
        if "password authentication failed" in text or "authentication failed" in text:
            why = "the server refused the user name or password"
        elif "does not exist" in text and "database" in text:
            why = "no such database on the server (create it first)"
        elif any(w in text for w in ("Connection refused", "could not connect", "timeout")):
            why = "no PostgreSQL server answers there (is it running? `memstrata pg start`)"
        else:
            why = text.split("failed: ")[-1][:200]
        raise StoreError(f"cannot open the PostgreSQL store at {where}: {why}") from exc


def _now() -> str:
    from memstrata.store.sqlite_common import _now as now

    return now()


def episode(row: Sequence[Any]) -> Episode:
    return Episode(
        key=row[0],
        namespace=row[1],
        id=row[2],
        text=row[3],
        speaker=row[4],
        role=row[5],
        occurred_at=row[6],
        session=row[7],
        seq=row[8],
        metadata=json.loads(row[9]) if row[9] else {},
        created_at=row[10],
    )


class Base:
    """The connection, its lock and namespace lookups, shared by the store's mixins.

    One connection guarded by a lock, like the SQLite store: the engine calls the store
    from worker threads, and a write's statements must go through one transaction."""

    url: str
    _conn: psycopg.Connection[Any]
    _lock: threading.RLock

    @contextmanager
    def _write(self) -> Iterator[psycopg.Connection[Any]]:
        """One transaction: all or nothing."""
        with self._lock, self._conn.transaction():
            yield self._conn

    def _all(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    def _one(self, sql: str, args: Sequence[Any] = ()) -> Any:
        with self._lock:
            return self._conn.execute(sql, args).fetchone()

    def _ns_id(self, namespace: str) -> int | None:
        """The namespace's id, looked up each time: another connection may have deleted
        and re-made it (ids are never reused, so a stale one would only find nothing)."""
        row = self._one("SELECT id FROM namespaces WHERE name=%s", (namespace,))
        return None if row is None else int(row[0])

    @staticmethod
    def _create_ns(conn: psycopg.Connection[Any], namespace: str) -> int:
        """The namespace's id, made if missing, its row locked until the transaction ends:
        writers of one namespace go one at a time (``seq`` and the BM25 totals)."""
        from memstrata.store.base import check_namespace

        row = conn.execute(
            "INSERT INTO namespaces(name, created_at) VALUES (%s, %s) ON CONFLICT (name) "
            "DO UPDATE SET name=EXCLUDED.name RETURNING id",
            (check_namespace(namespace), _now()),
        ).fetchone()
        assert row is not None
        return int(row[0])

    @staticmethod
    def _lock_ns(conn: psycopg.Connection[Any], namespace: str) -> int | None:
        row = conn.execute(
            "SELECT id FROM namespaces WHERE name=%s FOR UPDATE", (namespace,)
        ).fetchone()
        return None if row is None else int(row[0])


def count_speakers(
    conn: psycopg.Connection[Any],
    ns_id: int,
    added: Iterable[str | None] = (),
    removed: Iterable[str | None] = (),
) -> None:
    """Keep ``speaker_counts`` in step with episodes written in the caller's transaction:
    one upsert per speaker of the batch, in name order (two writers lock the rows in the
    same order), and a speaker with no episode left is dropped."""
    for speaker, n in speaker_deltas(added, removed):
        conn.execute(
            "INSERT INTO speaker_counts(namespace_id, speaker, n) VALUES (%s,%s,%s) "
            "ON CONFLICT (namespace_id, speaker) DO UPDATE "
            "SET n = speaker_counts.n + EXCLUDED.n",
            (ns_id, speaker, n),
        )
        if n < 0:
            conn.execute(
                "DELETE FROM speaker_counts WHERE namespace_id=%s AND speaker=%s AND n <= 0",
                (ns_id, speaker),
            )
