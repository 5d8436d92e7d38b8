"""The PostgreSQL store's API keys (hashed, scoped, revocable, named by a random public
id, guarding the store once it has had one: as ``sqlite_keys``)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from memstrata.store.base import ApiKey
from memstrata.store.postgres.common import PostgresBase
from memstrata.store.sql.common import now as _now


class ServiceTables(PostgresBase):
    """Part of :class:`~memstrata.store.postgres.store.PostgresStore`."""

    # API keys ---------------------------------------------------------------------------
    def add_api_key(
        self, digest: str, prefix: str, namespaces: Sequence[str], scope: str, label: str | None
    ) -> ApiKey:
        with self._write() as conn:
            row = conn.execute(
                "INSERT INTO api_keys(public_id, hash, prefix, namespaces, scope, label, "
                f"created_at) VALUES (%s,%s,%s,%s,%s,%s,%s) RETURNING {ApiKey.COLUMNS}",
                (ApiKey.new_id(), digest, prefix, json.dumps(list(namespaces)), scope, label,
                 _now()),
            ).fetchone()  # fmt: skip
        assert row is not None
        return ApiKey.from_row(row)

    def api_key(self, digest: str) -> ApiKey | None:
        row = self._one(f"SELECT {ApiKey.COLUMNS} FROM api_keys WHERE hash=%s", (digest,))
        return ApiKey.from_row(row) if row else None

    def api_keys(self) -> list[ApiKey]:
        return [
            ApiKey.from_row(r)
            for r in self._all(f"SELECT {ApiKey.COLUMNS} FROM api_keys ORDER BY id")
        ]

    def revoke_api_key(self, key_id: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE api_keys SET revoked_at=%s WHERE public_id=%s AND revoked_at IS NULL",
                (_now(), key_id),
            )
            return cur.rowcount > 0

    def keys_guarded(self) -> bool:
        return self._one("SELECT 1 FROM api_keys WHERE opened_at IS NULL LIMIT 1") is not None

    def lift_key_guard(self) -> int:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE api_keys SET opened_at=%s WHERE opened_at IS NULL "
                "AND revoked_at IS NOT NULL",
                (_now(),),
            )
            return int(cur.rowcount)
