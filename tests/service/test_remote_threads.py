"""The synchronous ``RemoteMemory`` shared by the threads of an application: 160 threads
adding through one client to a real server on a loopback port all succeed, and the
service stores 160 episodes."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx

from memstrata import RemoteMemory

THREADS = 160


def test_one_client_shared_by_160_threads(served: tuple[httpx.Client, Path]) -> None:
    rest, _ = served
    root = str(rest.base_url).rstrip("/").removesuffix("/v1")
    start = threading.Barrier(THREADS)
    failures: list[BaseException] = []
    stored: list[str] = []
    before = set(threading.enumerate())
    with RemoteMemory(root, namespace="web") as memory:

        def add(i: int) -> None:
            start.wait()  # every thread calls at once
            try:
                stored.append(memory.add(f"Request {i} was served.", id=f"r{i}").id)
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=add, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == [] and len(stored) == THREADS
        assert memory.stats("web")["namespaces"][0]["episodes"] == THREADS
    left = [t.name for t in set(threading.enumerate()) - before]
    assert not [n for n in left if n.startswith("memstrata-")]  # closing ended the client's thread
    ids: list[str] = []
    params: dict[str, str | int] = {"limit": 50}
    while True:
        page = rest.get("/namespaces/web/episodes", params=params).json()
        ids += [e["id"] for e in page["episodes"]]
        if page["next"] is None:
            break
        params["after"] = page["next"]
    assert sorted(ids) == sorted(f"r{i}" for i in range(THREADS))
