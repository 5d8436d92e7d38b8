"""API keys against a served store: no key, a wrong or revoked key, a read key writing, a
key of one namespace on another (404, and nothing of it in any response), admin work; and
the `memstrata keys` commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from memstrata.service import keys
from memstrata.store import open_store
from memstrata.store.base import WOULD_WAIT

A = [{"id": "a1", "text": "Maya keeps her passport in the blue drawer.", "speaker": "Maya"}]
B = [{"id": "b1", "text": "Zoltan hides the spare key under the red pot.", "speaker": "Zoltan"}]


def _make(db: Path, namespaces: list[str], scope: str) -> str:
    store = open_store(db)
    try:
        return keys.make_key(store, namespaces, scope)[0]
    finally:
        store.close()


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_the_key_matrix(served: tuple[httpx.Client, Path]) -> None:
    client, db = served
    # no key yet: open (the service binds to loopback only in this mode)
    assert client.post("/namespaces/a/episodes", json={"episodes": A}).status_code == 200
    assert client.post("/namespaces/b/episodes", json={"episodes": B}).status_code == 200
    admin = _make(db, ["*"], "admin")
    write_a, read_a = _make(db, ["a"], "write"), _make(db, ["a"], "read")
    search = {"query": "where is the key hidden?", "k": 5}

    none = client.post("/namespaces/a/search", json=search)
    assert none.status_code == 401 and none.json()["error"]["code"] == "unauthorized"
    assert none.headers["www-authenticate"] == "Bearer"
    wrong = client.post("/namespaces/a/search", json=search, headers=_bearer("msk_nope"))
    assert wrong.status_code == 401
    assert client.get("/health").status_code == 200  # health needs no key

    ok = client.post("/namespaces/a/search", json=search, headers=_bearer(read_a))
    assert ok.status_code == 200 and ok.json()["hits"][0]["sources"] == ["a1"]
    also = client.post("/namespaces/a/search", json=search, headers={"X-API-Key": read_a})
    assert also.status_code == 200
    denied = client.post("/namespaces/a/episodes", json={"episodes": B}, headers=_bearer(read_a))
    assert denied.status_code == 403 and denied.json()["error"]["code"] == "forbidden"
    added = client.post(
        "/namespaces/a/episodes",
        json={"episodes": [{"id": "a2", "text": "Maya renewed it in May."}]},
        headers=_bearer(write_a),
    )
    assert added.json()["added"] == ["a2"]

    # a key of namespace a on namespace b: as if b did not exist, and nothing of b shows
    for response in (
        client.post("/namespaces/b/search", json=search, headers=_bearer(write_a)),
        client.get("/namespaces/b/episodes/b1", headers=_bearer(write_a)),
        client.get("/namespaces/b/stats", headers=_bearer(write_a)),
        client.delete("/namespaces/b", headers=_bearer(write_a)),
    ):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "namespace_not_found"
        assert "Zoltan" not in response.text and "red pot" not in response.text
    missing = client.get("/namespaces/zzz/stats", headers=_bearer(write_a))
    assert (
        missing.json()["error"]["message"].replace("zzz", "b")
        == (client.get("/namespaces/b/stats", headers=_bearer(write_a)).json()["error"]["message"])
    )  # the same answer as for a namespace that does not exist
    assert client.get("/namespaces", headers=_bearer(read_a)).json() == {"namespaces": ["a"]}
    assert client.get("/namespaces", headers=_bearer(admin)).json() == {"namespaces": ["a", "b"]}

    # admin work: keys are made and revoked through the API too
    assert client.get("/keys", headers=_bearer(write_a)).status_code == 403
    made = client.post("/keys", json={"namespaces": ["b"], "scope": "read"}, headers=_bearer(admin))
    new = made.json()
    assert new["key"].startswith("msk_") and new["namespaces"] == ["b"]
    found = client.post("/namespaces/b/search", json=search, headers=_bearer(new["key"]))
    assert found.json()["hits"][0]["sources"] == ["b1"]
    listed = client.get("/keys", headers=_bearer(admin)).json()["keys"]
    assert len(listed) == 4 and all("key" not in k and "hash" not in k for k in listed)
    admin_a = _make(db, ["a"], "admin")
    escalate = client.post("/keys", json={"namespaces": ["b"]}, headers=_bearer(admin_a))
    assert escalate.status_code == 403
    assert client.delete(f"/keys/{new['id']}", headers=_bearer(admin_a)).status_code == 404
    assert client.delete(f"/keys/{new['id']}", headers=_bearer(admin)).json() == {"revoked": True}
    revoked = client.post("/namespaces/b/search", json=search, headers=_bearer(new["key"]))
    assert revoked.status_code == 401


def test_keys_commands(tmp_path: Path) -> None:
    db = tmp_path / "k.db"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memstrata", "keys", *args, "--db", str(db)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    made = run("create", "-n", "me", "--scope", "write", "--label", "agent")
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert key.startswith("msk_") and "shown once" in made.stderr
    store = open_store(db)
    try:
        (stored,) = store.api_keys()
        assert store.api_key(keys.digest(key)) == stored and stored.namespaces == ["me"]
    finally:
        store.close()
    assert key not in db.read_bytes().decode("latin-1")  # only its hash is stored
    listed = run("list")
    assert listed.returncode == 0 and "write\tme\tagent\tlive" in listed.stdout
    assert run("revoke", str(stored.id)).returncode == 0
    assert "revoked" in run("list").stdout
    again = run("revoke", str(stored.id))
    assert again.returncode == 1 and "no live key" in again.stderr
    bad = run("create", "-n", "me", "--scope", "root")
    assert bad.returncode == 2 and "unknown scope" in bad.stderr


def test_a_key_check_waits_for_a_busy_store_and_decides_alike(tmp_path: Path) -> None:
    """The check reads at once while the store is free and goes off the event loop while
    a writer holds it: the same decisions either way, and a busy store never lets a
    request through unchecked."""
    import asyncio
    import threading

    import pytest

    store = open_store(tmp_path / "k.db")
    try:
        assert asyncio.run(keys.check(store, {}, "write")) is None  # no key yet: open
        read = keys.make_key(store, ["a"], "read")[0]
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with store._write():  # type: ignore[attr-defined]
                held.set()
                release.wait(10)

        async def decisions() -> list[str]:
            out = []
            bearer = {"authorization": f"Bearer {read}"}  # as the server's headers read
            for headers, scope in (({}, "read"), (bearer, "read"), (bearer, "write")):
                try:
                    key = await keys.check(store, headers, scope)
                    out.append(f"ok {key.scope if key else None}")
                except (keys.Unauthorized, keys.Forbidden) as exc:
                    out.append(type(exc).__name__)
            return out

        free = asyncio.run(decisions())
        holder = threading.Thread(target=hold)
        holder.start()
        assert held.wait(10)
        read_at_once, went_off = store.read_at_once, threading.Event()

        def noting(read: Any) -> Any:
            found = read_at_once(read)
            if found is WOULD_WAIT:
                went_off.set()
            return found

        store.read_at_once = noting  # type: ignore[method-assign]

        async def while_busy() -> list[str]:
            task = asyncio.create_task(decisions())
            assert await asyncio.to_thread(went_off.wait, 10)  # the store would make it wait
            assert not task.done()  # waiting for the writer, off the loop
            release.set()
            return await task

        busy = asyncio.run(while_busy())
        holder.join()
        assert free == busy == ["Unauthorized", "ok read", "Forbidden"]
        with pytest.raises(keys.Unauthorized):
            asyncio.run(keys.check(store, {"x-api-key": "msk_wrong"}, "read"))
    finally:
        store.close()
