"""One session of each design on each store, from the same test code: add, build,
search, update and delete on the heuristic tier, then every store invariant
(:mod:`memstrata.eval.invariants`) and the design's own checks. ``store_at`` runs it on
SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from memstrata.embed.base import Embedder
from memstrata.eval.faults import (
    BUILT,
    GONE,
    GONE_TEXT,
    GONE_WORDS,
    MOVED,
    MOVED_NEW,
    NS,
    conversation,
)
from memstrata.eval.invariants import check_store, design_problems, expected_lines
from memstrata.memory import AsyncMemory, Memory
from waiting import Clock

LINES = conversation(30)
MANUAL: dict[str, Any] = {"build.mode": "manual", "llm.kind": "none"}


def rests_on(hits: list[Any], episode: str) -> bool:
    return any(h.id == episode or episode in h.sources for h in hits)


@pytest.mark.parametrize("recipe", BUILT)
def test_a_session_of_each_design(
    recipe: str, store_at: Callable[[str], str], embedder: Embedder
) -> None:
    async def session() -> None:
        async with AsyncMemory.open(store_at("m"), embedder=embedder, recipe=recipe, **MANUAL) as m:
            assert len((await m.add_many(LINES, namespace=NS)).added) == len(LINES)
            reports = await m.build(NS, tier="heuristic")
            assert reports and all(r.failed == 0 and not r.errors for r in reports)
            (stats,) = m.store.stats(NS)
            builders = list(stats.records_by_builder)
            assert builders, f"{recipe} built no records"
            assert all(stats.builds[b]["done"] == len(LINES) for b in builders)
            found = await m.search(GONE_TEXT, namespace=NS, k=10)
            assert rests_on(found.hits, GONE)

            assert await m.update(MOVED, MOVED_NEW, namespace=NS)
            assert await m.delete([GONE], namespace=NS) == 1
            await m.build(NS, tier="heuristic")
            found = await m.search(GONE_TEXT, namespace=NS, k=10)
            assert not rests_on(found.hits, GONE)
            expected = {k: v for k, v in expected_lines(LINES).items() if k != GONE}
            expected[MOVED] = {**expected[MOVED], "text": MOVED_NEW}
            findings = await asyncio.to_thread(
                check_store, m.store, NS, expected, builders, gone_words=(*GONE_WORDS, "Lancaster")
            )
            assert findings.ok, findings.problems()
            assert await design_problems(m, NS, [recipe]) == []

    asyncio.run(session())


def test_a_lease_of_another_host_is_taken_over_once_it_expires(
    store_at: Callable[[str], str], embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holder elsewhere cannot be asked whether it runs: its lease counts until
    ``build.lease_s`` has passed without a renewal, then the build takes it over. The
    1.5 s pass on a test clock: the build's waits move it on at once."""
    clock = Clock(monkeypatch)
    with Memory.open(store_at("m"), embedder=embedder, recipe="memtree", **MANUAL) as m:
        m.engine.clock, m.engine.sleep = clock.monotonic, clock.sleep
        m.add_many(LINES[:8], namespace=NS)
        other = "elsewhere:4242:stalled"
        assert m.store.acquire_lease(NS, "memtree", other, 1.5)
        assert m.store.lease_holder(NS, "memtree") == other
        (report,) = m.build(NS)
        # build.wait_s is 600, so the build looks again every second (min(1, 600 / 10)):
        # refused at 0 s and at 1 s, the lease is gone at 2 s
        assert clock.slept == [1.0, 1.0]
        assert (report.episodes, report.failed, report.errors) == (8, 0, [])
        assert m.store.lease_holder(NS, "memtree") is None  # released when done


def test_a_build_that_lost_its_lease_stops_writing(
    store_at: Callable[[str], str], embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease is renewed after each batch; when another process has taken it over
    meanwhile (this one stalled past ``build.lease_s``), the build stops there."""
    with Memory.open(
        store_at("m"), embedder=embedder, recipe="memtree", **MANUAL, **{"build.batch_size": 4}
    ) as m:
        m.add_many(LINES[:12], namespace=NS)
        store, other = m.store, "elsewhere:4242:new-holder"
        acquire, calls = store.acquire_lease, []

        def renew(namespace: str, builder: str, owner: str, ttl_s: float) -> bool:
            calls.append(owner)
            if len(calls) == 2:  # the first renewal: the lease expired and was taken
                store.release_lease(namespace, builder, owner)
                assert acquire(namespace, builder, other, 600)
            return acquire(namespace, builder, owner, ttl_s)

        monkeypatch.setattr(store, "acquire_lease", renew)
        (report,) = m.build(NS)
        assert report.episodes == 4 and report.stopped
        assert report.errors == [f"lease lost to {other}: stopped after this batch"]
        (stats,) = store.stats(NS)
        assert stats.builds["memtree"]["done"] == 4  # nothing written after the loss
        assert store.lease_holder(NS, "memtree") == other  # the new holder keeps it
