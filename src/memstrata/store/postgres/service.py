"""The PostgreSQL store's tables for the service: jobs (read back from the build marks, as
``sqlite_jobs`` does) and API keys (hashed, scoped, revocable, named by a random public
id, guarding the store once it has had one: as ``sqlite_keys``)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from memstrata.store.base import ApiKey, BuildFailure, JobRecord
from memstrata.store.postgres.common import Base, _now
from memstrata.store.sqlite_jobs import FAILURES_SHOWN


class ServiceTables(Base):
    """Mixin of :class:`~memstrata.store.postgres.store.PostgresStore`."""

    # jobs -------------------------------------------------------------------------------
    def add_job(
        self,
        namespace: str,
        job_id: str,
        kind: str,
        recipe: str,
        builders: Sequence[str],
        external_ids: Sequence[str],
        keep_s: float = 7 * 86_400,
    ) -> int:
        now = time.time()
        with self._write() as conn:
            conn.execute("DELETE FROM jobs WHERE created_ts < %s", (now - keep_s,))
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return 0
            row = conn.execute(
                "INSERT INTO jobs(namespace_id, id, kind, recipe, builders, episodes, "
                "created_at, created_ts) VALUES (%s,%s,%s,%s,%s,0,%s,%s) RETURNING key",
                (ns_id, job_id, kind, recipe, json.dumps(list(builders)), _now(), now),
            ).fetchone()
            assert row is not None
            job = int(row[0])
            cur = conn.execute(
                "INSERT INTO job_episodes(namespace_id, job, episode_id) SELECT %s, %s, id "
                "FROM episodes WHERE namespace_id=%s AND external_id = ANY(%s) "
                "ON CONFLICT DO NOTHING",
                (ns_id, job, ns_id, list(dict.fromkeys(external_ids))),
            )
            count = int(cur.rowcount)
            conn.execute(
                "UPDATE jobs SET episodes=%s WHERE namespace_id=%s AND key=%s", (count, ns_id, job)
            )
            return count

    def job(self, job_id: str) -> JobRecord | None:
        with self._lock:
            row = self._one(
                "SELECT j.key, j.id, n.name, j.kind, j.recipe, j.builders, j.episodes, "
                "j.created_at, j.namespace_id FROM jobs j JOIN namespaces n "
                "ON n.id=j.namespace_id WHERE j.id=%s",
                (job_id,),
            )
            if row is None:
                return None
            key, ns_id, builders = row[0], row[8], json.loads(row[5])
            (present,) = self._one(
                "SELECT count(*) FROM job_episodes WHERE namespace_id=%s AND job=%s", (ns_id, key)
            )
            marks: dict[str, dict[str, int]] = {}
            retry: list[float] = []
            failures: list[BuildFailure] = []
            for builder in builders:
                counts = marks.setdefault(builder, {"done": 0, "failed": 0, "dead": 0})
                for status, n, soonest in self._all(
                    "SELECT b.status, count(*), min(b.retry_at) FROM job_episodes je "
                    "JOIN build_progress b ON b.namespace_id=je.namespace_id AND b.builder=%s "
                    "AND b.episode_id=je.episode_id WHERE je.namespace_id=%s AND je.job=%s "
                    "GROUP BY b.status",
                    (builder, ns_id, key),
                ):
                    counts[status] = int(n)
                    if status == "failed" and soonest is not None:
                        retry.append(float(soonest))
                if counts["failed"] or counts["dead"]:
                    failures.extend(
                        BuildFailure(*r)
                        for r in self._all(
                            "SELECT e.external_id, b.builder, b.status, b.attempts, "
                            "COALESCE(b.error, ''), b.retry_at FROM job_episodes je "
                            "JOIN build_progress b ON b.namespace_id=je.namespace_id "
                            "AND b.builder=%s AND b.episode_id=je.episode_id JOIN episodes e "
                            "ON e.namespace_id=je.namespace_id AND e.id=je.episode_id "
                            "WHERE je.namespace_id=%s AND je.job=%s "
                            "AND b.status IN ('failed','dead') ORDER BY je.episode_id LIMIT %s",
                            (builder, ns_id, key, FAILURES_SHOWN),
                        )
                    )
        return JobRecord(
            id=row[1],
            namespace=row[2],
            kind=row[3],
            recipe=row[4],
            builders=builders,
            episodes=row[6],
            present=int(present),
            created_at=row[7],
            marks=marks,
            next_retry_at=min(retry) if retry else None,
            failures=failures[:FAILURES_SHOWN],
        )

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
