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
from memstrata.memory import AsyncMemory

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
