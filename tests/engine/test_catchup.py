"""No recipe hides an episode its builder has not taken (queued, or failed): a search finds
it from the moment it is stored, and once it is built the recipe ranks as it does alone."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from memstrata import AsyncMemory
from memstrata.engine.catchup import LABEL
from memstrata.engine.registry import Registry

BUILT = [
    "Maya booked flights to Lisbon for June.",
    "Tomas adopted a grey cat called Pepper.",
    "Ines teaches piano in Porto.",
    "Rui repairs old bicycles on weekends.",
]
LATE = "Zofia collects antique typewriters from Gdansk."
RECIPES = [n for n, r in Registry.load({}).recipes.items() if r.builders]


@pytest.mark.parametrize("recipe", RECIPES)
def test_an_unbuilt_episode_is_found_by_every_recipe(
    tmp_path: Path, embedder: Any, recipe: str
) -> None:
    async def run() -> None:
        mem = await AsyncMemory.open(
            tmp_path / "m.db", embedder=embedder, recipe=recipe, **{"build.mode": "queue"}
        )
        try:
            await mem.add_many([{"id": f"e{i}", "text": t} for i, t in enumerate(BUILT)])
            await mem.build()
            before = await mem.search("antique typewriters Zofia")
            assert all(LABEL not in h.routes for h in before.hits)
            await mem.add_many([{"id": "late", "text": LATE}])  # queued: nothing builds it
            # 10 per share of the recipe's kinds: each kind as deep as a k of 10 was
            k = mem.engine.recipe(recipe).fusion.total(10)
            found = await mem.search("antique typewriters Zofia", k=k)
            assert "late" in {s for h in found.hits for s in h.sources}, recipe
            assert "Gdansk" in found.context
            await mem.build()
            after = await mem.search("antique typewriters Zofia")
            assert all(LABEL not in h.routes for h in after.hits)  # built: the design alone
        finally:
            await mem.close()

    asyncio.run(run())
