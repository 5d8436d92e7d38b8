"""The REST service on a real loopback port, through a real HTTP client: a session with
every verb, the background build, and bad input answered with a clear 4xx and nothing
stored."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from service_helpers import LIMIT, free_port

from memstrata.memory import Memory
from waiting import until, until_served

TURNS = [
    {
        "id": "t1",
        "text": "Maya booked flights to Lisbon for the June conference.",
        "speaker": "Maya",
    },
    {"id": "t2", "text": "Tomas adopted a greyhound called Pepper.", "speaker": "Tomas"},
    {"id": "t3", "text": "Maya said the talk is about streaming pipelines.", "speaker": "Maya"},
]


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["code"] == code and body["message"]
    assert "Traceback" not in response.text
    return body


def test_a_session_with_every_verb(served: tuple[httpx.Client, Path]) -> None:
    client, _ = served
    assert client.get("/health").json() == {"status": "ok"}
    assert client.get("/ready").json()["status"] == "ready"
    added = client.post("/namespaces/me/episodes", json={"episodes": TURNS}).json()
    assert added["added"] == ["t1", "t2", "t3"]
    again = client.post("/namespaces/me/episodes", json={"episodes": TURNS[:1]}).json()
    assert again["existing"] == ["t1"] and again["added"] == []  # a retried request
    other = {**TURNS[1], "text": "Tomas adopted a cat."}
    clash = client.post("/namespaces/me/episodes", json={"episodes": [other]}).json()
    assert clash["conflicts"] == ["t2"]
    assert client.get("/namespaces").json() == {"namespaces": ["me"]}

    found = client.post("/namespaces/me/search", json={"query": "greyhound Pepper", "k": 2})
    hits = found.json()["hits"]
    assert hits and hits[0]["sources"] == ["t2"]  # searchable as soon as committed
    answer = client.post("/namespaces/me/ask", json={"question": "Where is Maya flying to?"})
    assert answer.status_code == 200 and set(answer.json()) >= {"text", "sources", "abstained"}

    assert client.get("/namespaces/me/episodes/t1").json()["text"] == TURNS[0]["text"]
    updated = client.put("/namespaces/me/episodes/t2", json={"text": "Tomas adopted a cat."})
    assert updated.json()["text"] == "Tomas adopted a cat."
    versions = client.get("/namespaces/me/episodes/t2/history").json()["versions"]
    assert [v["text"] for v in versions] == ["Tomas adopted a greyhound called Pepper."]

    def builds() -> dict[str, Any]:
        return dict(client.get("/namespaces/me/stats").json()["namespaces"][0]["builds"])

    # the worker folds the episodes in, in the background (here nothing: the default
    # recipe has no builders)
    until(lambda: all(b["queued"] == 0 for b in builds().values()), "nothing queued")
    assert all(b["queued"] == 0 and b["failed"] == 0 for b in builds().values()), builds()
    assert client.post("/namespaces/me/retry").json() == {"queued": 0}

    gone = client.delete("/namespaces/me/episodes", params={"id": ["t3", "nope"]}).json()
    assert gone == {"deleted": 1, "missing": ["nope"]}
    _error(client.get("/namespaces/me/episodes/t3"), 404, "not_found")
    assert client.get("/recipes").json()["recipes"]
    schema = client.get("/../openapi.json").json()
    assert "/v1/namespaces/{namespace}/search" in schema["paths"]


def test_bad_input_gets_a_clear_error_and_stores_nothing(
    served: tuple[httpx.Client, Path],
) -> None:
    client, db = served
    client.post("/namespaces/me/episodes", json={"episodes": TURNS[:1]})
    post = "/namespaces/me/episodes"
    _error(client.post(post, content=b'{"episodes": [', headers=_json()), 400, "malformed_json")
    _error(
        client.post(post, content=b'{"episodes": [{"text": "\xff\xfe"}]}', headers=_json()),
        400,
        "malformed_json",
    )
    _error(client.post(post, json={"episodes": [{"text": 5}]}), 422, "invalid_request")
    _error(
        client.post(post, json={"episodes": [{"text": "x", "colour": "red"}]}),
        422,
        "invalid_request",
    )
    _error(client.post(post, json={"episodes": []}), 422, "invalid_request")
    # the document's patterns refuse what the core's checks would (422, naming the field)
    _error(client.post(post, json={"episodes": [{"text": "   "}]}), 422, "invalid_request")
    _error(
        client.post(post, json={"episodes": [{"text": "ok", "id": "a\x00b"}]}),
        422,
        "invalid_request",
    )
    big = {"episodes": [{"text": "word " * (LIMIT // 4)}]}
    body = _error(client.post(post, content=json.dumps(big), headers=_json()), 413, "too_large")
    assert str(LIMIT) in body["message"]
    fifty = b'{"episodes": [{"text": "' + b"x" * (50 * 1024 * 1024) + b'"}]}'
    _error(client.post(post, content=fifty, headers=_json()), 413, "too_large")  # by its length

    def chunks() -> Iterator[bytes]:  # the same 50 MB streamed without a length
        for start in range(0, len(fifty), 1 << 20):
            yield fifty[start : start + (1 << 20)]

    try:
        streamed = client.post(post, content=chunks(), headers=_json())
    except httpx.TransportError:
        pass  # the server may close the connection while the body is still being sent
    else:
        _error(streamed, 413, "too_large")
    _error(client.get("/namespaces/nobody/episodes/t1"), 404, "namespace_not_found")
    _error(
        client.post("/namespaces/nobody/search", json={"query": "x"}), 404, "namespace_not_found"
    )
    _error(client.post("/namespaces/me/search", json={"query": ""}), 422, "invalid_request")
    _error(
        client.post("/namespaces/me/search", json={"query": "x", "recipe": "nope"}),
        400,
        "invalid_config",
    )
    _error(
        client.post("/namespaces/me/search", json={"query": "x", "k": 0}), 422, "invalid_request"
    )
    _error(client.delete("/namespaces/me/episodes"), 422, "invalid_request")
    _error(client.get("/nowhere"), 404, "not_found")
    with Memory.open(db) as memory:  # nothing of the refused requests was stored
        assert [e.id for e in memory.store.iter_episodes("me")] == ["t1"]
        assert memory.store.namespaces() == ["me"]


def _json() -> dict[str, str]:
    return {"content-type": "application/json"}


def test_serve_refuses_an_open_non_loopback_interface(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "memstrata", "serve", "--db", str(tmp_path / "x.db"),
         "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 2 and "refusing to serve on '0.0.0.0'" in run.stderr
    assert not (tmp_path / "x.db").exists()


@pytest.mark.slow
def test_memstrata_serve_process(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memstrata", "serve", "--db", str(tmp_path / "s.db"),
         "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/v1"
        until_served(f"{url}/health", proc, lambda: proc.communicate()[1])
        with httpx.Client(base_url=url, timeout=60) as client:
            assert (
                client.post("/namespaces/a/episodes", json={"episodes": TURNS}).status_code == 200
            )
            hits = client.post("/namespaces/a/search", json={"query": "Lisbon flights"}).json()
            assert hits["hits"][0]["sources"] == ["t1"]
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=60)
    # uvicorn shuts down cleanly on SIGTERM, then exits by the same signal
    assert "Application shutdown complete" in stderr and proc.returncode in (0, -15), stderr
    assert "no API keys" in stderr
