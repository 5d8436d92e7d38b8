"""A served store whose process is killed in the middle of a job: the job never reads
succeeded for the work left undone, and the next server takes the queue over and
finishes it, every episode built once and none lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
from service_helpers import free_port

from memstrata import jobs
from memstrata.store import open_store
from waiting import until, until_served

EPISODES = 600


def _turns() -> list[dict[str, Any]]:
    lines = resources.files("memstrata.data").joinpath("sample_conversation.jsonl")
    texts = [json.loads(x)["text"] for x in lines.read_text().splitlines() if x.strip()]
    return [
        {"id": f"t{i}", "text": f"{texts[i % len(texts)]} (round {i // len(texts)})"}
        for i in range(EPISODES)
    ]


def _serve(db: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "MEMSTRATA_RECIPE": "mnemis",
        "MEMSTRATA_BUILD__BATCH_SIZE": "1",  # one transaction per episode: a kill lands mid-job
        "MEMSTRATA_BUILD__POLL_S": "0.05",
    }
    cmd = [sys.executable, "-m", "memstrata", "serve", "--db", str(db), "--port", str(port)]
    process = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = process.stderr
    assert stderr is not None
    until_served(f"http://127.0.0.1:{port}/v1/ready", process, lambda: stderr.read().decode())
    return process


def _status(db: Path, job_id: str) -> jobs.JobStatus:
    """The job as the store's marks say, read without any server."""
    store = open_store(str(db), create=False)
    try:
        record = store.job(job_id)
        assert record is not None
        return jobs.judge(record)
    finally:
        store.close()


def test_a_job_outlives_its_killed_server(tmp_path: Path) -> None:
    db, port = tmp_path / "m.db", free_port()
    first = _serve(db, port)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        added = httpx.post(
            f"{url}/namespaces/ns/episodes", json={"episodes": _turns()}, timeout=120
        )
        assert added.status_code == 200, added.text
        job_id = added.json()["job"]["id"]

        def inside() -> bool:  # kill once the worker is inside the job
            job = httpx.get(f"{url}/jobs/{job_id}", timeout=30).json()
            assert job["state"] != "succeeded", "the job ended before the kill"
            return bool(job["done"])

        until(inside, "the worker began the job", every=0.02)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()

    halted = _status(db, job_id)
    assert halted.state == "running" and 0 < halted.done < EPISODES
    assert halted.queued == EPISODES - halted.done - halted.failed - halted.dead

    second = _serve(db, port)  # takes the dead process's lease over at once (same host)
    try:

        def ended() -> dict[str, Any] | None:
            job = httpx.get(f"http://127.0.0.1:{port}/v1/jobs/{job_id}", timeout=30).json()
            assert job["done"] >= halted.done
            return None if job["state"] == "running" else dict(job)

        job = until(ended, "the second server ended the job", timeout=600, every=0.1)
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=60)

    assert job["state"] == "succeeded", job
    assert (job["done"], job["steps"], job["failed"], job["dead"]) == (EPISODES,) * 2 + (0, 0)
    store = open_store(str(db), create=False)
    try:
        assert len(store.built_keys("ns", "mnemis")) == EPISODES
        assert store.pending_count("ns", "mnemis") == 0
        assert len(store.iter_episodes("ns", limit=10 * EPISODES)) == EPISODES
    finally:
        store.close()
