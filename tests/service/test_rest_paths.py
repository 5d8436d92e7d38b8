"""REST details a client relies on: listing with paging and filters, namespaces and ids
holding "/" (sent percent-encoded), and 429 once too many requests are in flight."""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import quote

import httpx
from service_helpers import serving

from memstrata import RemoteMemory
from memstrata.config import Config
from waiting import until


def test_listing_pages_and_filters(served: tuple[httpx.Client, Path]) -> None:
    client, _ = served
    episodes = [
        {"id": f"e{i}", "text": f"turn {i}", "speaker": "Ana" if i % 2 else "Rui"}
        | ({"occurred_at": f"2024-05-{i + 1:02d}T10:00:00"} if i < 6 else {})
        for i in range(9)
    ]
    assert client.post("/namespaces/ns/episodes", json={"episodes": episodes}).status_code == 200
    ids: list[str] = []
    params: dict[str, str | int] = {"limit": 4}
    while True:
        page = client.get("/namespaces/ns/episodes", params=params).json()
        ids += [e["id"] for e in page["episodes"]]
        if page["next"] is None:
            break
        params["after"] = page["next"]
    assert ids == [f"e{i}" for i in range(9)]
    ana = client.get("/namespaces/ns/episodes", params={"speaker": "Ana", "limit": 2}).json()
    assert [e["id"] for e in ana["episodes"]] == ["e1", "e3"] and ana["next"] is not None
    rest = client.get(
        "/namespaces/ns/episodes", params={"speaker": "Ana", "after": ana["next"]}
    ).json()
    assert [e["id"] for e in rest["episodes"]] == ["e5", "e7"] and rest["next"] is None
    window = client.get(
        "/namespaces/ns/episodes",
        params={"since": "2024-05-02T00:00:00", "until": "2024-05-04T23:00:00"},
    ).json()
    assert [e["id"] for e in window["episodes"]] == ["e1", "e2", "e3"]
    unknown = client.get("/namespaces/nobody/episodes")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "namespace_not_found"
    bad = client.get("/namespaces/ns/episodes", params={"limit": 0})
    assert bad.status_code == 422


def test_slashes_in_namespaces_and_ids(served: tuple[httpx.Client, Path]) -> None:
    client, _ = served
    ns, id_ = "team/alpha", "notes/2024/05"
    base = f"/namespaces/{quote(ns, safe='')}"
    added = client.post(f"{base}/episodes", json={"episodes": [{"id": id_, "text": "Kiln at 9"}]})
    assert added.status_code == 200 and added.json()["added"] == [id_]
    assert ns in client.get("/namespaces").json()["namespaces"]
    got = client.get(f"{base}/episodes/{quote(id_, safe='')}")
    assert got.status_code == 200 and got.json()["text"] == "Kiln at 9"
    put = client.put(f"{base}/episodes/{quote(id_, safe='')}", json={"text": "Kiln at 10"})
    assert put.status_code == 200
    history = client.get(f"{base}/episodes/{quote(id_, safe='')}/history").json()
    assert [v["text"] for v in history["versions"]] == ["Kiln at 9"]  # what was replaced
    hits = client.post(f"{base}/search", json={"query": "kiln"}).json()["hits"]
    assert hits[0]["sources"] == [id_]
    # the same through the remote client, which encodes the names itself
    with RemoteMemory(str(client.base_url).rstrip("/").removesuffix("/v1")) as remote:
        assert [e.text for e in remote.get([id_], namespace=ns)] == ["Kiln at 10"]
        assert remote.stats(ns)["namespaces"][0]["episodes"] == 1
    gone = client.delete(base)
    assert gone.status_code == 200 and gone.json()["deleted"] == 1
    assert ns not in client.get("/namespaces").json()["namespaces"]


def test_requests_past_the_limit_get_429(tmp_path: Path) -> None:
    config = Config.load(store=str(tmp_path / "m.db"), recipe="mnemis", **{"build.mode": "queue"})
    with serving(config, workers=0, max_inflight=1) as client:  # nothing builds: jobs wait
        added = client.post("/namespaces/ns/episodes", json={"episodes": [{"text": "a"}]})
        job_id = added.json()["job"]["id"]
        opened, release = threading.Event(), threading.Event()

        def hold() -> None:  # an event stream of a queued job takes the one slot
            with client.stream("GET", f"/jobs/{job_id}/events") as response:
                for _ in response.iter_lines():
                    opened.set()
                    release.wait(timeout=60)
                    break

        holder = threading.Thread(target=hold, daemon=True)
        holder.start()
        assert opened.wait(timeout=30)
        base = str(client.base_url).rstrip("/")
        refused = httpx.get(base + "/namespaces", timeout=30)
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
        assert refused.json()["error"]["code"] == "too_many_requests"
        assert httpx.get(base + "/health").status_code == 200
        release.set()
        holder.join(timeout=30)
        until(
            lambda: httpx.get(base + "/namespaces").status_code == 200,
            "the closed stream gave its slot back",
            every=0.05,
        )
