"""The memstrata clients every adapter is tested over, each on a fresh store: ``Memory``
and ``AsyncMemory`` in process, ``RemoteMemory`` to a store served on loopback."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.service.service_helpers import serving

from memstrata import AsyncMemory, AsyncRemoteMemory, Memory, RemoteMemory
from memstrata.config import Config
from memstrata.embed import MiniLMEmbedder

CLIENTS = ["memory", "async-memory", "remote"]
#: the four, with ``AsyncRemoteMemory``
ALL_CLIENTS = [*CLIENTS, "async-remote"]


@contextlib.asynccontextmanager
async def opened(kind: str, tmp_path: Path, embedder: MiniLMEmbedder) -> AsyncIterator[Any]:
    """A memstrata client of ``kind`` (one of :data:`ALL_CLIENTS`) on a fresh store."""
    if kind == "memory":
        with Memory.open(tmp_path / "m.db", embedder=embedder) as memory:
            yield memory
    elif kind == "async-memory":
        async with await AsyncMemory.open(tmp_path / "a.db", embedder=embedder) as memory:
            yield memory
    else:
        with serving(Config.load(store=str(tmp_path / "served.db"))) as http:
            root = str(http.base_url).rstrip("/").removesuffix("/v1")
            if kind == "async-remote":
                async with AsyncRemoteMemory(root) as aremote:
                    yield aremote
            else:
                with RemoteMemory(root) as memory:
                    yield memory


def run_over(
    kind: str, tmp_path: Path, embedder: MiniLMEmbedder, scenario: Callable[[Any], Awaitable[Any]]
) -> Any:
    """``scenario(client)`` on an event loop of its own."""

    async def main() -> Any:
        async with opened(kind, tmp_path, embedder) as client:
            return await scenario(client)

    return asyncio.run(main())


async def call(value: Any) -> Any:
    """A client verb's result, from a sync facade (a value) or an async client (awaited)."""
    return await value if asyncio.iscoroutine(value) else value
