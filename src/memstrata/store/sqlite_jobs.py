"""The SQLite store's jobs (schema v7): what an add left to build, read back from the marks."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from memstrata.store.base import BuildFailure, JobRecord
from memstrata.store.sqlite_common import _chunks, _now

#: failures listed with a job (the counts cover them all)
FAILURES_SHOWN = 20


class Jobs:
    """Mixin of :class:`~memstrata.store.sqlite.SQLiteStore`."""

    if TYPE_CHECKING:
        _conn: sqlite3.Connection
        _lock: threading.RLock

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...
        def _ns_id(self, namespace: str, create: bool = False) -> int | None: ...

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
            conn.execute("DELETE FROM jobs WHERE created_ts < ?", (now - keep_s,))
            ns_id = self._ns_id(namespace)
            if ns_id is None:
                return 0
            cur = conn.execute(
                "INSERT INTO jobs(id, namespace_id, kind, recipe, builders, episodes, "
                "created_at, created_ts) VALUES (?,?,?,?,?,0,?,?)",
                (job_id, ns_id, kind, recipe, json.dumps(list(builders)), _now(), now),
            )
            job = cur.lastrowid
            for chunk in _chunks(list(dict.fromkeys(external_ids)), 500):
                marks = ",".join("?" * len(chunk))
                conn.execute(
                    "INSERT OR IGNORE INTO job_episodes(job, episode_id) SELECT ?, id FROM "
                    f"episodes WHERE namespace_id=? AND external_id IN ({marks})",
                    (job, ns_id, *chunk),
                )
            (count,) = conn.execute(
                "SELECT COUNT(*) FROM job_episodes WHERE job=?", (job,)
            ).fetchone()
            conn.execute("UPDATE jobs SET episodes=? WHERE key=?", (count, job))
            return int(count)

    def job(self, job_id: str) -> JobRecord | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT j.key, j.id, n.name, j.kind, j.recipe, j.builders, j.episodes, "
                "j.created_at, j.namespace_id FROM jobs j JOIN namespaces n "
                "ON n.id=j.namespace_id WHERE j.id=?",
                (job_id,),
            ).fetchone()
            if row is None:
                return None
            key, ns_id, builders = row[0], row[8], json.loads(row[5])
            (present,) = self._conn.execute(
                "SELECT COUNT(*) FROM job_episodes WHERE job=?", (key,)
            ).fetchone()
            marks: dict[str, dict[str, int]] = {}
            retry: list[float] = []
            failures: list[BuildFailure] = []
            for builder in builders:
                counts = marks.setdefault(builder, {"done": 0, "failed": 0, "dead": 0})
                # the build_progress key (namespace, builder, episode) makes each a lookup
                for status, n, soonest in self._conn.execute(
                    "SELECT b.status, COUNT(*), MIN(b.retry_at) FROM job_episodes je "
                    "JOIN build_progress b ON b.namespace_id=? AND b.builder=? "
                    "AND b.episode_id=je.episode_id WHERE je.job=? GROUP BY b.status",
                    (ns_id, builder, key),
                ):
                    counts[status] = int(n)
                    if status == "failed" and soonest is not None:
                        retry.append(float(soonest))
                if counts["failed"] or counts["dead"]:
                    failures.extend(
                        BuildFailure(*r)
                        for r in self._conn.execute(
                            "SELECT e.external_id, b.builder, b.status, b.attempts, "
                            "COALESCE(b.error, ''), b.retry_at FROM job_episodes je "
                            "JOIN build_progress b ON b.namespace_id=? AND b.builder=? "
                            "AND b.episode_id=je.episode_id JOIN episodes e "
                            "ON e.id=je.episode_id WHERE je.job=? "
                            "AND b.status IN ('failed','dead') ORDER BY je.episode_id LIMIT ?",
                            (ns_id, builder, key, FAILURES_SHOWN),
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
