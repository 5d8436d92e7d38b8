"""What guards the served store before any route runs, on a real server over real sockets:
a store that has had keys stays guarded when its last key is revoked (and the loopback
rule follows every change), requests are authenticated from their headers before their
bodies are read, slow bodies are cut off, a share of the capacity stays with keyed
callers, an open server answers only its own host names (DNS rebinding), and an event
stream ends when its key is revoked."""

from __future__ import annotations

import json
import select
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from service_helpers import serving

from memstrata.config import Config
from memstrata.service import keys
from memstrata.store import open_store
from waiting import until

TURNS = [
    {"id": "o1", "text": "The globex launch moved to the ninth of March.", "speaker": "Ines"},
    {"id": "o2", "text": "Ines keeps the vendor contracts in the shared drive.", "speaker": "Ines"},
]


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstrata", *args], capture_output=True, text=True, timeout=180
    )


# 8. revoking the last key ------------------------------------------------------------------
def test_a_store_that_had_keys_stays_guarded_when_its_last_key_is_revoked(
    store_url: str,
) -> None:
    """A tenant admin revokes both keys of its tenant; without a key nobody then reads or
    deletes another namespace or mints a key. Reopening is the operator's explicit act
    (`memstrata keys reopen`, refused while a key is live), and the open server answers
    again only because it listens on loopback."""
    config = Config.load(store=store_url, **{"build.mode": "queue"})
    with serving(config) as client:
        assert (
            client.post("/namespaces/other/episodes", json={"episodes": TURNS}).status_code == 200
        )
        store = open_store(store_url)
        try:
            admin_t, admin_made = keys.make_key(store, ["t"], "admin", "tenant admin")
            _, write_made = keys.make_key(store, ["t"], "write", "tenant writer")
        finally:
            store.close()
        for made in (write_made, admin_made):  # the tenant's own key last
            revoked = client.delete(f"/keys/{made.id}", headers=_bearer(admin_t))
            assert revoked.json() == {"revoked": True}, revoked.text
        for response in (
            client.get("/namespaces/other/episodes"),
            client.delete("/namespaces/other"),
            client.post("/keys", json={"namespaces": ["*"], "scope": "admin"}),
            client.get("/namespaces"),
            client.get("/keys"),
        ):
            assert response.status_code == 401, response.text
        assert client.get("/whoami").json()["scope"] is None  # keys in use: none presented
        still = open_store(store_url)
        try:
            assert [e.id for e in still.iter_episodes("other")] == ["o1", "o2"]
            assert len(still.api_keys()) == 2  # no key was minted
            keys.make_key(still, ["t"], "read")  # a live key: reopening is refused
        finally:
            still.close()
        refused = _cli("keys", "reopen", "--db", store_url, "--yes")
        assert refused.returncode == 2 and "live" in refused.stderr, refused.stderr
        assert client.get("/namespaces").status_code == 401
        store = open_store(store_url)
        try:
            for key in store.api_keys():
                store.revoke_api_key(key.id)
        finally:
            store.close()
        assert client.get("/namespaces").status_code == 401  # revoking opens nothing
        reopened = _cli("keys", "reopen", "--db", store_url, "--yes")
        assert reopened.returncode == 0, reopened.stderr
        assert "open" in reopened.stderr and "loopback" in reopened.stderr
        assert client.get("/namespaces").json() == {"namespaces": ["other"]}  # on loopback


def test_an_open_store_is_refused_on_a_server_bound_beyond_loopback(tmp_path: Path) -> None:
    """The loopback rule is checked against the bind address whenever the store's keys
    change, not only when the server starts: keys allowed binding 0.0.0.0, and once the
    operator reopens the store, that server answers nobody rather than everybody."""
    db = str(tmp_path / "m.db")
    store = open_store(db)
    try:
        admin, made = keys.make_key(store, ["*"], "admin")
    finally:
        store.close()
    config = Config.load(store=db, **{"build.mode": "queue"})
    with serving(config, host="0.0.0.0") as client:
        added = client.post(
            "/namespaces/n/episodes", json={"episodes": TURNS}, headers=_bearer(admin)
        )
        assert added.status_code == 200
        assert client.delete(f"/keys/{made.id}", headers=_bearer(admin)).json() == {"revoked": True}
        assert _cli("keys", "reopen", "--db", db, "--yes").returncode == 0
        refused = client.get("/namespaces/n/episodes")
        assert refused.status_code == 401, refused.text
        assert "loopback" in refused.json()["error"]["message"]
        assert client.get("/whoami").status_code == 401


# 9. slow bodies -------------------------------------------------------------------------
def _port(client: httpx.Client) -> int:
    port = client.base_url.port
    assert port is not None
    return port


def _send(port: int, head: str, body: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
    return sock


def _response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of the next response on ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"closed before a response: {data!r}")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
    while len(rest) < int(headers.get("content-length", "0")):
        rest += sock.recv(65536)
    return int(lines[0].split()[1]), headers, rest


def _closed(sock: socket.socket) -> bool:
    """Whether the server has closed the connection (what it sent is read first)."""
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _head(method: str, path: str, port: int, *lines: str) -> str:
    return "\n".join([f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", *lines, ""])


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[tuple[httpx.Client, str]]:
    """A served store with a key: 8 requests in flight at most, bodies read for 60 s."""
    db = str(tmp_path / "m.db")
    store = open_store(db)
    try:
        key = keys.make_key(store, ["a"], "write")[0]
    finally:
        store.close()
    config = Config.load(store=db, **{"build.mode": "queue"})
    with serving(config, max_inflight=8, body_timeout_s=60) as client:
        added = client.post(
            "/namespaces/a/episodes", json={"episodes": TURNS}, headers=_bearer(key)
        )
        assert added.status_code == 200
        yield client, key


def test_unauthenticated_slow_bodies_lock_nobody_out(keyed: tuple[httpx.Client, str]) -> None:
    """64 sockets (eight times the capacity) that start a body and stall, without a key,
    each get 401 from their headers alone and their connection closed, and take no slot:
    keyed searches answer all along."""
    client, key = keyed
    port = _port(client)
    search = "/v1/namespaces/a/search"
    stalled = []
    for i in range(64):
        framing = "Content-Length: 5000" if i % 2 else "Transfer-Encoding: chunked"
        head = _head("POST", search, port, "Content-Type: application/json", framing)
        stalled.append(_send(port, head, b"{" if i % 2 else b"1\r\n{\r\n"))
    for sock in stalled:
        status, headers, body = _response(sock)
        assert status == 401 and json.loads(body)["error"]["code"] == "unauthorized"
        assert headers["connection"] == "close" and _closed(sock)
        sock.close()
    found = client.post(
        "/namespaces/a/search", json={"query": "globex launch"}, headers=_bearer(key)
    )
    assert found.status_code == 200 and found.json()["hits"][0]["sources"] == ["o1"]


def test_callers_without_a_key_leave_a_share_of_the_capacity(
    keyed: tuple[httpx.Client, str],
) -> None:
    """Requests that need no key (here: bodies streamed to a path without a route, read
    before its 404) fill at most 6 of the 8 slots; keyed searches still answer while they
    stall, and the slots come back when they hang up."""
    client, key = keyed
    port = _port(client)
    head = _head("POST", "/v1/nowhere", port, "Transfer-Encoding: chunked")
    holders = [_send(port, head, b"1\r\n{\r\n") for _ in range(6)]
    ready = str(client.base_url) + "ready"

    def refused() -> httpx.Response | None:  # once the six are inside, a seventh waits
        probe = httpx.get(ready)
        return probe if probe.status_code == 429 else None

    probe = until(refused, "the six callers got inside")
    assert probe.json()["error"]["code"] == "too_many_requests"
    assert not select.select(holders, [], [], 0)[0]  # the six are still inside: no answer
    seventh = _send(port, head, b"1\r\n{\r\n")
    assert _response(seventh)[0] == 429
    seventh.close()
    for _ in range(3):
        found = client.post("/namespaces/a/search", json={"query": "vendor contracts"},
                            headers=_bearer(key))  # fmt: skip
        assert found.status_code == 200, found.text
    for sock in holders:
        sock.close()
    until(
        lambda: httpx.get(ready).status_code == 200,
        "the hung-up requests gave their slots back",
    )


def test_a_body_that_does_not_arrive_in_time_gets_408_and_its_socket_closed(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "m.db")
    store = open_store(db)
    try:
        key = keys.make_key(store, ["a"], "write")[0]
    finally:
        store.close()
    config = Config.load(store=db, **{"build.mode": "queue"})
    with serving(config, max_inflight=2, body_timeout_s=0.3) as client:
        port = _port(client)
        stalled = []
        for _ in range(2):  # a keyed caller's slow bodies take every slot, for a while
            head = _head(
                "POST",
                "/v1/namespaces/a/episodes",
                port,
                f"Authorization: Bearer {key}",
                "Content-Type: application/json",
                "Content-Length: 400",
            )
            stalled.append(_send(port, head, b'{"episodes": ['))
        for sock in stalled:
            status, headers, body = _response(sock)
            assert status == 408 and json.loads(body)["error"]["code"] == "request_timeout"
            assert headers["connection"] == "close" and _closed(sock)
            sock.close()
        added = client.post(
            "/namespaces/a/episodes", json={"episodes": TURNS}, headers=_bearer(key)
        )
        assert added.status_code == 200 and added.json()["added"] == ["o1", "o2"]


# 10. DNS rebinding ---------------------------------------------------------------------------
def test_an_open_server_answers_only_its_own_host_names(served: tuple[httpx.Client, Path]) -> None:
    client, db = served
    port = _port(client)
    client.post("/namespaces/a/episodes", json={"episodes": TURNS})
    base = f"http://127.0.0.1:{port}"
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "127.0.0.1", f"[::1]:{port}"):
        assert httpx.get(base + "/v1/namespaces", headers={"Host": host}).status_code == 200, host
    rebound = {"Host": f"attacker.example:{port}"}
    for method, path in (("GET", "/v1/namespaces"), ("GET", "/"), ("DELETE", "/v1/namespaces/a"),
                         ("GET", "/explorer/index.html"), ("GET", "/v1/whoami")):  # fmt: skip
        refused = httpx.request(method, base + path, headers=rebound)
        assert refused.status_code == 421, (path, refused.status_code)
        assert refused.json()["error"]["code"] == "misdirected_request"
    assert (
        httpx.get(base + "/v1/namespaces", headers={"Host": f"127.0.0.1:{port + 1}"}).status_code
        == 421
    )
    evil = {"Origin": "http://attacker.example"}
    assert httpx.delete(base + "/v1/namespaces/a", headers=evil).status_code == 421
    assert httpx.get(base + "/v1/namespaces", headers={"Origin": base}).status_code == 200
    assert [e.id for e in open_store(db).iter_episodes("a")] == ["o1", "o2"]
    # with keys in use a proxy's own host name is fine: the key is what guards it
    store = open_store(db)
    try:
        key = keys.make_key(store, ["a"], "read")[0]
    finally:
        store.close()
    proxied = {"Host": "memory.example.org", **_bearer(key)}
    assert httpx.get(base + "/v1/namespaces", headers=proxied).status_code == 200


# 12. an event stream ends with its key -------------------------------------------------------
def test_an_event_stream_ends_when_its_key_is_revoked(store_url: str) -> None:
    config = Config.load(store=store_url, recipe="mnemis", **{"build.mode": "queue"})
    store = open_store(store_url)
    try:
        key, made = keys.make_key(store, ["a"], "write")
    finally:
        store.close()
    with serving(config, workers=0) as client:  # nothing builds: the job stays queued
        added = client.post(
            "/namespaces/a/episodes", json={"episodes": TURNS}, headers=_bearer(key)
        )
        job_id = added.json()["job"]["id"]
        events: list[tuple[str, dict[str, object]]] = []
        kind = ""
        with client.stream("GET", f"/jobs/{job_id}/events", headers=_bearer(key)) as stream:
            for line in stream.iter_lines():
                # the job waits: only a comment (every 15 s) would come while the stream
                # goes on; the stream of a revoked key must end long before that
                assert not line.startswith(":"), "the stream went on after its key was revoked"
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    events.append((kind, json.loads(line.removeprefix("data: "))))
                    if len(events) == 1:  # the job as it stands; now the key goes
                        store = open_store(store_url)
                        try:
                            assert store.revoke_api_key(made.id)
                        finally:
                            store.close()
        assert events[0][0] == "job" and events[0][1]["state"] == "queued"
        assert events[-1][0] == "error"
        assert events[-1][1]["code"] == "unauthorized", events[-1]
        assert len(events) == 2
