"""The synchronous ``Memory`` shared by the threads of an application: 160 threads adding
through one facade at once all succeed, and every episode is stored."""

from __future__ import annotations

import threading
from pathlib import Path

from memstrata import Memory

THREADS = 160


def test_one_memory_shared_by_160_threads(tmp_path: Path, embedder) -> None:
    before = set(threading.enumerate())
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        start = threading.Barrier(THREADS)
        failures: list[BaseException] = []
        stored: list[str] = []

        def add(i: int) -> None:
            start.wait()  # every thread calls at once
            try:
                stored.append(m.add(f"Thread {i} was here.", id=f"t{i}").id)
                assert [e.id for e in m.get(f"t{i}")] == [f"t{i}"]
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=add, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == [] and len(stored) == THREADS
        assert sorted(stored) == sorted(f"t{i}" for i in range(THREADS))
        assert len(m.store.all_episodes("default")) == THREADS
    left = [t.name for t in set(threading.enumerate()) - before]
    assert not [n for n in left if n.startswith("memstrata-")]  # closing ended the facade's thread
