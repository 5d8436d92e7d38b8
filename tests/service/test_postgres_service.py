"""The service on a PostgreSQL store, unchanged: `memstrata serve --db postgresql://...`
refuses to run open off loopback, serves a session with keys and a job, and a second
server on the same database sees what the first wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from service_helpers import free_port

import pgtest
from memstrata.service import keys
from memstrata.store import open_store
from waiting import until, until_served


def _serve(url: str, port: int, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "MEMSTRATA_RECIPE": "mnemis", "MEMSTRATA_BUILD__POLL_S": "0.05"}
    cmd = [sys.executable, "-m", "memstrata", "serve", "--db", url, "--port", str(port), *extra]
    process = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    stderr = process.stderr
    assert stderr is not None
    until_served(f"http://127.0.0.1:{port}/v1/health", process, stderr.read)
    return process


def test_the_service_on_postgresql(tmp_path: Path) -> None:
    url = pgtest.database_url(tmp_path)
    try:
        refused = subprocess.run(
            [sys.executable, "-m", "memstrata", "serve", "--db", url, "--host", "0.0.0.0"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert refused.returncode == 2 and "refusing to serve" in refused.stderr

        store = open_store(url)
        try:
            writer = keys.make_key(store, ["team"], "write")[0]
            other = keys.make_key(store, ["elsewhere"], "read")[0]
        finally:
            store.close()
        auth = {"Authorization": f"Bearer {writer}"}
        first, second = free_port(), free_port()
        one = _serve(url, first, "--host", "0.0.0.0")  # allowed: keys exist
        two = _serve(url, second, "--workers", "0")
        try:
            api = f"http://127.0.0.1:{first}/v1"
            turns = [
                {"id": "p1", "text": "Maya booked flights to Lisbon for June."},
                {"id": "p2", "text": "Tomas adopted a grey cat called Pepper."},
            ]
            added = httpx.post(f"{api}/namespaces/team/episodes", json={"episodes": turns},
                               headers=auth, timeout=60).json()  # fmt: skip
            assert added["added"] == ["p1", "p2"]
            job_id = added["job"]["id"]

            def ended() -> dict[str, Any] | None:
                job = httpx.get(f"{api}/jobs/{job_id}", headers=auth, timeout=30).json()
                return None if job["state"] in ("queued", "running") else dict(job)

            job = until(ended, f"job {job_id} ended", every=0.05)
            assert (job["state"], job["done"], job["steps"]) == ("succeeded", 2, 2)
            # the second server, on the same database, sees the episodes and the job
            api2 = f"http://127.0.0.1:{second}/v1"
            hits = httpx.post(f"{api2}/namespaces/team/search", json={"query": "grey cat"},
                              headers=auth, timeout=60).json()  # fmt: skip
            assert hits["hits"][0]["sources"] == ["p2"]
            seen = httpx.get(f"{api2}/jobs/{job_id}", headers=auth, timeout=30).json()
            assert seen["state"] == "succeeded"
            foreign = httpx.get(f"{api2}/jobs/{job_id}", headers={"X-API-Key": other})
            assert foreign.status_code == 404
            assert httpx.get(f"{api2}/namespaces/team/stats").status_code == 401
        finally:
            logs = []
            for process in (one, two):
                process.terminate()
                logs.append(process.communicate(timeout=60)[1])
        password = url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
        for log in logs:  # the "serving" line and the server's log show the URL masked
            assert "serving postgresql://postgres:********@" in log and password not in log
    finally:
        pgtest.drop(tmp_path)
