"""A Mnemis build stopped and resumed in a new process builds the same hierarchy as one
that ran through: the store keeps records in the order they were made, so a graph loaded
again iterates them as the first process did (the hierarchy's grouping depends on it)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Config
from memstrata.eval.faults import conversation
from memstrata.memory import AsyncMemory

TURNS = 64


async def _build(path: Path, embedder: Any, stop_after: int | None) -> list[Any]:
    config = Config.load(recipe="mnemis", **{"build.mode": "manual", "build.batch_size": 8})
    memory = await AsyncMemory.open(path, config=config, embedder=embedder)
    await memory.add_many(conversation(TURNS))
    if stop_after is not None:
        stop, seen = asyncio.Event(), [0]

        def progress(n: int) -> None:
            seen[0] += n
            if seen[0] >= stop_after:
                stop.set()

        (report,) = await memory.build(progress=progress, stop=stop)
        assert report.stopped
        await memory.close()  # the next build starts from the store alone
        memory = await AsyncMemory.open(path, config=config, embedder=embedder)
    await memory.build()
    store = memory.store
    names = {e.id: e.name for e in store.get_records("default", "entity", builder="mnemis")}
    cats = store.get_records("default", "category", builder="mnemis")
    names |= {c.id: c.name for c in cats}
    await memory.close()
    return sorted((c.layer, c.name, sorted(names[i] for i in c.child_ids)) for c in cats)


@pytest.mark.parametrize("stop_after", [16, 40])
def test_a_resumed_build_makes_the_same_hierarchy(
    tmp_path: Path, embedder: Any, stop_after: int
) -> None:
    through = asyncio.run(_build(tmp_path / "through.db", embedder, None))
    resumed = asyncio.run(_build(tmp_path / "resumed.db", embedder, stop_after))
    assert through and resumed == through
