"""Connection plumbing of the PostgreSQL store: opening, errors in words, the host class
of its parts."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from memstrata.errors import StoreClosedError, StoreError
from memstrata.redact import redact
from memstrata.store.names import check_namespace
from memstrata.store.sql.common import now
from memstrata.store.sql.dialect import POSTGRES
from memstrata.store.sql.host import SQLCore

CONNECT_TIMEOUT_S = 10


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


class PostgresBase(SQLCore):
    """What every part of :class:`~memstrata.store.postgres.store.PostgresStore` may use."""

    dialect = POSTGRES
    _conn: psycopg.Connection[Any]

    @contextmanager
    def _write(self) -> Iterator[psycopg.Connection[Any]]:
        """One transaction: all or nothing."""
        with self._lock, self._conn.transaction():
            yield self._conn

    @contextmanager
    def _snapshot(self) -> Iterator[psycopg.Connection[Any]]:
        """One REPEATABLE READ transaction: a single snapshot of the database."""
        with self._lock, self._conn.transaction():
            self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield self._conn

    def _ns_id(self, namespace: str) -> int | None:
        """The namespace's id, looked up each time: another connection may have deleted
        and re-made it (ids are never reused, so a stale one would only find nothing)."""
        row = self._one("SELECT id FROM namespaces WHERE name=%s", (namespace,))
        return None if row is None else int(row[0])

    def _create_ns(self, conn: psycopg.Connection[Any], namespace: str) -> int:
        """The namespace's id, made if missing, its row locked until the transaction ends:
        writers of one namespace go one at a time (``seq`` and the BM25 totals)."""
        row = conn.execute(
            "INSERT INTO namespaces(name, created_at) VALUES (%s, %s) ON CONFLICT (name) "
            "DO UPDATE SET name=EXCLUDED.name RETURNING id",
            (check_namespace(namespace), now()),
        ).fetchone()
        assert row is not None
        return int(row[0])

    # what the parts call on each other --------------------------------------------------
    @classmethod
    def _index(cls, conn: psycopg.Connection[Any], ns_id: int, key: int, text: str) -> None:
        raise NotImplementedError

    @staticmethod
    def _unindex(conn: psycopg.Connection[Any], ns_id: int, keys: list[int]) -> None:
        raise NotImplementedError
