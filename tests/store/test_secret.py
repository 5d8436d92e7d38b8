"""A store's secrets (what seals the list cursor), on every backend: 32 random bytes made
once, the same for every connection to the store, one per name."""

from __future__ import annotations

import threading
from collections.abc import Callable

from memstrata.store import Store


def test_a_secret_is_made_once_and_shared(open_backend: Callable[[], Store]) -> None:
    first, second = open_backend(), open_backend()
    seen: list[bytes] = []
    start = threading.Barrier(4)

    def ask(store: Store) -> None:
        start.wait()  # two connections make it at the same moment: one value wins
        seen.append(store.secret("cursor"))

    threads = [threading.Thread(target=ask, args=(s,)) for s in (first, second, first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 4 and len(set(seen)) == 1 and len(seen[0]) == 32
    assert open_backend().secret("cursor") == seen[0]  # kept in the store
    other = first.secret("another")
    assert len(other) == 32 and other != seen[0]
    assert first.namespaces() == []  # nothing a caller sees
