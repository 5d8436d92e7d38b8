"""The SQLite store's API keys (schema v6, public ids and the guard since v12): hashed,
scoped, revocable."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TypeVar

from memstrata.store.base import WOULD_WAIT, ApiKey, WouldWait
from memstrata.store.sql.common import now as _now
from memstrata.store.sqlite_base import SQLiteBase

T = TypeVar("T")


class ApiKeys(SQLiteBase):
    """Part of :class:`~memstrata.store.sqlite.SQLiteStore`."""

    def add_api_key(
        self, digest: str, prefix: str, namespaces: Sequence[str], scope: str, label: str | None
    ) -> ApiKey:
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO api_keys(public_id, hash, prefix, namespaces, scope, label, "
                "created_at) VALUES (?,?,?,?,?,?,?)",
                (ApiKey.new_id(), digest, prefix, json.dumps(list(namespaces)), scope, label,
                 _now()),
            )  # fmt: skip
            row = conn.execute(
                f"SELECT {ApiKey.COLUMNS} FROM api_keys WHERE id=?", (cur.lastrowid,)
            ).fetchone()
        return ApiKey.from_row(row)

    def api_key(self, digest: str) -> ApiKey | None:
        with self._lock:
            row = self._conn.execute(
                f"SELECT {ApiKey.COLUMNS} FROM api_keys WHERE hash=?", (digest,)
            ).fetchone()
        return ApiKey.from_row(row) if row else None

    def api_keys(self) -> list[ApiKey]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {ApiKey.COLUMNS} FROM api_keys ORDER BY id"
            ).fetchall()
        return [ApiKey.from_row(r) for r in rows]

    def read_at_once(self, read: Callable[[], T]) -> T | WouldWait:
        """At once while no other thread holds the connection: a read in WAL mode does
        not wait for writers of other processes."""
        if not self._lock.acquire(blocking=False):
            return WOULD_WAIT
        try:
            return read()
        finally:
            self._lock.release()

    def revoke_api_key(self, key_id: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE api_keys SET revoked_at=? WHERE public_id=? AND revoked_at IS NULL",
                (_now(), key_id),
            )
            return cur.rowcount > 0

    def keys_guarded(self) -> bool:
        with self._lock:
            row = self._conn.execute(
                "SELECT 1 FROM api_keys WHERE opened_at IS NULL LIMIT 1"
            ).fetchone()
        return row is not None

    def lift_key_guard(self) -> int:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE api_keys SET opened_at=? WHERE opened_at IS NULL "
                "AND revoked_at IS NOT NULL",
                (_now(),),
            )
            return cur.rowcount
