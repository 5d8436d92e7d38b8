"""API keys, as both SQL stores keep them: hashed, scoped, revocable, named by a random
public id; once the store has had a key, it is guarded until the guard is lifted (a key
whose guard flag ``opened_at`` is unset keeps the service from opening without keys)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from memstrata.store.base import ApiKey
from memstrata.store.sql.common import now
from memstrata.store.sql.host import SQLCore


class ApiKeys(SQLCore):
    """Part of a SQL store: the ``api_keys`` table."""

    def add_api_key(
        self, digest: str, prefix: str, namespaces: Sequence[str], scope: str, label: str | None
    ) -> ApiKey:
        with self._write() as conn:
            row = conn.execute(
                self._sql(
                    "INSERT INTO api_keys(public_id, hash, prefix, namespaces, scope, label, "
                    f"created_at) VALUES (?,?,?,?,?,?,?) RETURNING {ApiKey.COLUMNS}"
                ),
                (ApiKey.new_id(), digest, prefix, json.dumps(list(namespaces)), scope, label,
                 now()),
            ).fetchone()  # fmt: skip
        return ApiKey.from_row(row)

    def api_key(self, digest: str) -> ApiKey | None:
        row = self._row(f"SELECT {ApiKey.COLUMNS} FROM api_keys WHERE hash=?", (digest,))
        return ApiKey.from_row(row) if row else None

    def api_keys(self) -> list[ApiKey]:
        rows = self._rows(f"SELECT {ApiKey.COLUMNS} FROM api_keys ORDER BY id")
        return [ApiKey.from_row(r) for r in rows]

    def revoke_api_key(self, key_id: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                self._sql(
                    "UPDATE api_keys SET revoked_at=? WHERE public_id=? AND revoked_at IS NULL"
                ),
                (now(), key_id),
            )
            return int(cur.rowcount) > 0

    def keys_guarded(self) -> bool:
        return self._row("SELECT 1 FROM api_keys WHERE opened_at IS NULL LIMIT 1") is not None

    def lift_key_guard(self) -> int:
        with self._write() as conn:
            cur = conn.execute(
                self._sql(
                    "UPDATE api_keys SET opened_at=? WHERE opened_at IS NULL "
                    "AND revoked_at IS NOT NULL"
                ),
                (now(),),
            )
            return int(cur.rowcount)
