"""The first lines users write: ``async with AsyncMemory.open(...)`` and a sync facade whose
methods show their real signatures and docstrings."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

from memstrata import AsyncMemory, Memory


def test_async_with_open_closes_on_exit(tmp_path: Path, embedder) -> None:
    async def main() -> AsyncMemory:
        async with AsyncMemory.open(tmp_path / "m.db", embedder=embedder) as m:
            await m.add("I planted basil on the balcony.", id="t1", namespace="home")
            hits = (await m.search("basil", namespace="home")).hits
            assert hits[0].sources == ["t1"]
        return m

    m = asyncio.run(main())
    try:
        m.store.namespaces()
    except Exception as exc:  # the store was closed on the way out of the block
        assert "closed" in str(exc).lower()
    else:
        raise AssertionError("the store is still open after the async with block")


def test_await_open_still_works(tmp_path: Path, embedder) -> None:
    async def main() -> list[str]:
        m = await AsyncMemory.open(tmp_path / "m.db", embedder=embedder)
        async with m:  # and the opened memory is itself a context manager
            await m.add("hello", namespace="x")
            return await m.namespaces()

    assert asyncio.run(main()) == ["x"]


def test_sync_methods_have_real_signatures_and_docstrings() -> None:
    for name in (
        "add",
        "add_many",
        "search",
        "search_many",
        "ask",
        "build",
        "retry",
        "work",
        "show",
        "get",
        "delete",
        "stats",
        "open",
    ):
        method = getattr(Memory, name)
        params = inspect.signature(method).parameters
        assert not any(p.kind is p.VAR_KEYWORD for p in params.values() if name != "open"), name
        assert method.__doc__ and len(method.__doc__) > 20, name
    search = inspect.signature(Memory.search).parameters
    assert {"namespace", "k", "recipe", "filters", "max_tokens"} <= set(search)
    add = inspect.signature(Memory.add).parameters
    assert {"id", "speaker", "occurred_at", "session", "metadata"} <= set(add)
