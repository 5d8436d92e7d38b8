"""Jobs over REST: an add returns at once with a job that reports its building as it goes,
a failed enrichment is reported as failed with its reason while the episode stays
searchable, and a job is as invisible to another tenant as one that does not exist."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import httpx
from service_helpers import serving

from memstrata.config import Config
from memstrata.service import keys
from memstrata.store import open_store
from waiting import until

TURNS = [
    "Maya booked flights to Lisbon for June.",
    "Tomas adopted a grey cat called Pepper.",
    "Maya's sister Ines lives in Porto and teaches piano.",
    "Tomas started a pottery class on Thursdays.",
]


def _config(db: Path, **extra: Any) -> Config:
    options = {"build.mode": "queue", "build.poll_s": 0.05, "recipe": "mnemis", **extra}
    return Config.load(store=str(db), **options)


def _episodes(prefix: str, texts: list[str] = TURNS) -> dict[str, Any]:
    return {"episodes": [{"id": f"{prefix}{i}", "text": t} for i, t in enumerate(texts)]}


def _wait(client: httpx.Client, job_id: str) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        job = client.get(f"/jobs/{job_id}").json()
        return dict(job) if job["state"] in ("succeeded", "failed", "removed") else None

    return until(ended, f"job {job_id} ended", every=0.05)


def _events(client: httpx.Client, job_id: str) -> list[dict[str, Any]]:
    """The job events of a server-sent-events stream, read until the server ends it."""
    events, kind = [], None
    with client.stream("GET", f"/jobs/{job_id}/events", timeout=120) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line[len("event: ") :]
            elif line.startswith("data: "):
                assert kind == "job"
                events.append(json.loads(line[len("data: ") :]))
    return events


def test_an_add_returns_a_job_that_follows_its_building(tmp_path: Path) -> None:
    with serving(_config(tmp_path / "m.db")) as client:
        added = client.post("/namespaces/ns/episodes", json=_episodes("a"))
        assert added.status_code == 200
        job = added.json()["job"]
        assert job["id"].startswith("job_") and job["kind"] == "add"
        assert job["recipe"] == "mnemis" and job["episodes"] == 4 and job["steps"] == 4
        assert job["state"] in ("queued", "running", "succeeded")
        done = _wait(client, job["id"])
        assert done["state"] == "succeeded", done
        assert (done["done"], done["failed"], done["dead"], done["queued"]) == (4, 0, 0, 0)
        assert done["progress"] == 1.0 and done["builders"]["mnemis"]["done"] == 4

        # a stream of a job still to build: every change, in order, the last one final
        more = client.post("/namespaces/ns/episodes", json=_episodes("b", TURNS * 10))
        events = _events(client, more.json()["job"]["id"])
        assert events[-1]["state"] == "succeeded" and events[-1]["done"] == 40
        assert all(e["state"] != "succeeded" for e in events[:-1])
        progress = [e["done"] for e in events]
        assert progress == sorted(progress)
        # the stream of a finished job is its final state, once
        assert [e["state"] for e in _events(client, job["id"])] == ["succeeded"]

        # a retried add (same ids, same text) changes nothing and its job is done already
        again = client.post("/namespaces/ns/episodes", json=_episodes("a")).json()
        assert again["existing"] == ["a0", "a1", "a2", "a3"]
        assert again["job"]["state"] == "succeeded"

        # an update rebuilds what rests on the episode, under a job of its own
        changed = client.put("/namespaces/ns/episodes/a1", json={"text": "Tomas adopted Miso."})
        update = changed.json()["job"]
        assert update["kind"] == "update" and update["episodes"] == 1
        assert _wait(client, update["id"])["state"] == "succeeded"

        missing = client.get("/jobs/job_0000000000000000")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: nothing listens there


def test_a_failed_enrichment_is_reported_with_its_reason_and_hides_nothing(
    tmp_path: Path,
) -> None:
    """The LLM the builders need is down: the job ends failed with the reason, never
    succeeded, and the episodes are searchable all along."""
    config = _config(
        tmp_path / "m.db",
        **{
            "recipe": "mindgraph",
            "llm.kind": "openai",
            "llm.base_url": f"http://127.0.0.1:{_dead_port()}/v1",
            "llm.model": "absent",
            "llm.max_retries": 0,
            "llm.timeout_s": 5,
            "retrieval.tier": "heuristic",
            "build.max_attempts": 2,
            "build.backoff_s": 0,
        },
    )
    with serving(config) as client:
        added = client.post("/namespaces/ns/episodes", json=_episodes("e")).json()
        hits = client.post("/namespaces/ns/search", json={"query": "Pepper the grey cat"})
        assert hits.status_code == 200
        assert "e1" in {s for h in hits.json()["hits"] for s in h["sources"]}

        events = _events(client, added["job"]["id"])
        assert "succeeded" not in {e["state"] for e in events}
        final = events[-1]
        assert final["state"] == "failed", final
        assert (final["done"], final["dead"], final["steps"]) == (0, 4, 4)
        assert {f["episode"] for f in final["failures"]} == {"e0", "e1", "e2", "e3"}
        assert all(f["status"] == "dead" and f["attempts"] == 2 for f in final["failures"])
        assert all("Connect" in f["error"] or "connect" in f["error"] for f in final["failures"])
        assert "searchable" in final["message"]
        # after the failure too, every episode is stored and found
        assert client.get("/namespaces/ns/episodes/e2").status_code == 200
        hits = client.post("/namespaces/ns/search", json={"query": "Ines teaches piano"})
        assert "e2" in {s for h in hits.json()["hits"] for s in h["sources"]}
        body = {"query": "Ines teaches piano", "adaptive": True}
        cut = client.post("/namespaces/ns/search", json=body).json()["hits"]
        assert cut[0]["sources"] == ["e2"] and len(cut) < len(hits.json()["hits"])

        # retry queues them again: the job is no longer failed until they fail again
        assert client.post("/namespaces/ns/retry").json()["queued"] == 4
        again = _events(client, added["job"]["id"])
        assert again[-1]["state"] == "failed" and again[-1]["dead"] == 4


def test_another_tenants_job_is_not_found(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = open_store(str(db))
    key_a, _ = keys.make_key(store, ["a"], "write", None)
    key_b, _ = keys.make_key(store, ["b"], "write", None)
    store.close()
    with serving(_config(db)) as client:

        def auth(key: str) -> dict[str, str]:
            return {"Authorization": f"Bearer {key}"}

        made = client.post("/namespaces/a/episodes", json=_episodes("x"), headers=auth(key_a))
        job_id = made.json()["job"]["id"]
        assert client.get(f"/jobs/{job_id}", headers=auth(key_a)).status_code == 200
        for path in (f"/jobs/{job_id}", f"/jobs/{job_id}/events", "/jobs/job_unknown"):
            foreign = client.get(path, headers={"X-API-Key": key_b})
            assert foreign.status_code == 404, path
            assert foreign.json()["error"]["code"] == "not_found"
            assert '"a"' not in foreign.text and "x0" not in foreign.text
        assert client.get(f"/jobs/{job_id}").status_code == 401


def test_a_job_whose_episodes_are_deleted_says_removed(tmp_path: Path) -> None:
    with serving(_config(tmp_path / "m.db"), workers=0) as client:  # nothing builds
        job = client.post("/namespaces/ns/episodes", json=_episodes("d")).json()["job"]
        assert client.get(f"/jobs/{job['id']}").json()["state"] == "queued"
        client.delete("/namespaces/ns/episodes", params={"id": ["d0", "d1"]})
        half = client.get(f"/jobs/{job['id']}").json()
        assert (half["state"], half["removed"], half["steps"]) == ("queued", 2, 2)
        client.delete("/namespaces/ns/episodes", params={"id": ["d2", "d3"]})
        assert client.get(f"/jobs/{job['id']}").json()["state"] == "removed"
        client.delete("/namespaces/ns")
        assert client.get(f"/jobs/{job['id']}").status_code == 404  # gone with its namespace
