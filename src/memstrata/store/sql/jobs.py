"""Jobs of the service: what an add or update left to build, read back from the build
marks each time it is asked for (so a job cannot say more than the marks do)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from memstrata.store.base import BuildFailure, JobRecord
from memstrata.store.sql.common import now
from memstrata.store.sql.host import SQLCore

#: failures listed with a job (the counts cover them all)
FAILURES_SHOWN = 20


class Jobs(SQLCore):
    """Part of a SQL store: the ``jobs`` and ``job_episodes`` tables."""

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
        moment = time.time()
        with self._write() as conn:
            conn.execute(self._sql("DELETE FROM jobs WHERE created_ts < ?"), (moment - keep_s,))
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return 0
            row = conn.execute(
                self._sql(
                    "INSERT INTO jobs(namespace_id, id, kind, recipe, builders, episodes, "
                    "created_at, created_ts) VALUES (?,?,?,?,?,0,?,?) RETURNING key"
                ),
                (ns_id, job_id, kind, recipe, json.dumps(list(builders)), now(), moment),
            ).fetchone()
            job = int(row[0])
            self._in(
                conn,
                "INSERT INTO job_episodes(namespace_id, job, episode_id) SELECT ?, ?, id "
                "FROM episodes WHERE namespace_id=? AND external_id {in_} ON CONFLICT DO NOTHING",
                list(dict.fromkeys(external_ids)),
                lead=(ns_id, job, ns_id),
            )
            (count,) = conn.execute(
                self._sql("SELECT COUNT(*) FROM job_episodes WHERE namespace_id=? AND job=?"),
                (ns_id, job),
            ).fetchone()
            conn.execute(
                self._sql("UPDATE jobs SET episodes=? WHERE namespace_id=? AND key=?"),
                (count, ns_id, job),
            )
            return int(count)

    def job(self, job_id: str) -> JobRecord | None:
        with self._lock:
            row = self._row(
                "SELECT j.key, j.id, n.name, j.kind, j.recipe, j.builders, j.episodes, "
                "j.created_at, j.namespace_id FROM jobs j JOIN namespaces n "
                "ON n.id=j.namespace_id WHERE j.id=?",
                (job_id,),
            )
            if row is None:
                return None
            key, ns_id, builders = row[0], row[8], json.loads(row[5])
            (present,) = self._row(
                "SELECT COUNT(*) FROM job_episodes WHERE namespace_id=? AND job=?", (ns_id, key)
            )
            marks: dict[str, dict[str, int]] = {}
            retry: list[float] = []
            failures: list[BuildFailure] = []
            for builder in builders:
                counts = marks.setdefault(builder, {"done": 0, "failed": 0, "dead": 0})
                # the build_progress key (namespace, builder, episode) makes each a lookup
                for status, n, soonest in self._rows(
                    "SELECT b.status, COUNT(*), MIN(b.retry_at) FROM job_episodes je "
                    "JOIN build_progress b ON b.namespace_id=je.namespace_id AND b.builder=? "
                    "AND b.episode_id=je.episode_id WHERE je.namespace_id=? AND je.job=? "
                    "GROUP BY b.status",
                    (builder, ns_id, key),
                ):
                    counts[status] = int(n)
                    if status == "failed" and soonest is not None:
                        retry.append(float(soonest))
                if counts["failed"] or counts["dead"]:
                    failures.extend(
                        BuildFailure(*r)
                        for r in self._rows(
                            "SELECT e.external_id, b.builder, b.status, b.attempts, "
                            "COALESCE(b.error, ''), b.retry_at FROM job_episodes je "
                            "JOIN build_progress b ON b.namespace_id=je.namespace_id "
                            "AND b.builder=? AND b.episode_id=je.episode_id JOIN episodes e "
                            "ON e.namespace_id=je.namespace_id AND e.id=je.episode_id "
                            "WHERE je.namespace_id=? AND je.job=? "
                            "AND b.status IN ('failed','dead') ORDER BY je.episode_id LIMIT ?",
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
