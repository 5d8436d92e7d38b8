"""One way for every adapter to call a memstrata client, from sync or async code, and
to show a hit to a model.

The adapters speak to the client's async verbs. A sync facade (``Memory``,
``RemoteMemory``) runs them on its own loop thread, from sync code and from async code
alike; an async client (``AsyncMemory``, ``AsyncRemoteMemory``) is awaited, and a sync
call outside any event loop runs on a loop of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from typing import Any, TypeVar

from memstrata.errors import InvalidInputError, NamespaceNotFoundError
from memstrata.models import Episode, Hit
from memstrata.runner import Blocking
from memstrata.store.base import SearchFilters
from memstrata.store.names import check_namespace

T = TypeVar("T")


class Bridge:
    """The async client behind ``memory`` and the way to run its coroutines."""

    def __init__(self, memory: Any) -> None:
        self.facade: Blocking | None = memory if isinstance(memory, Blocking) else None
        #: the client whose async verbs the adapter calls
        self.client: Any = memory._inner if isinstance(memory, Blocking) else memory

    def run(self, coro: Coroutine[Any, Any, T], adapter: str) -> T:
        """``coro`` from sync code."""
        if self.facade is not None:
            return self.facade._run(coro)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        coro.close()
        raise RuntimeError(
            f"a sync call to {adapter} over an async client inside an event loop: await "
            f"its async methods, or give {adapter} a Memory"
        )

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """``coro`` from async code."""
        if self.facade is not None:
            return await asyncio.to_thread(self.facade._run, coro)
        return await coro


async def episodes(
    client: Any, namespace: str | None, session: str | None = None, page: int = 1000
) -> AsyncIterator[Episode]:
    """Every episode of ``namespace`` (of one ``session`` when given), in the order they
    were added, a page at a time; none for a namespace that does not exist yet."""
    only = SearchFilters(sessions=[session]) if session is not None else None
    after: str | None = None
    while True:
        try:
            found = await client.list(namespace=namespace, after=after, limit=page, filters=only)
        except NamespaceNotFoundError:  # nothing kept there yet
            return
        for episode in found.episodes:
            yield episode
        if found.next is None:
            return
        after = found.next


def held(namespace: str | None, error: type[Exception] = InvalidInputError) -> str | None:
    """``namespace`` if memstrata can hold it (None stays None: the client's default),
    else the framework's own ``error`` saying why."""
    if namespace is None:
        return None
    try:
        return check_namespace(namespace)
    except InvalidInputError as exc:
        raise error(f"memstrata cannot hold namespace {namespace!r}: {exc}") from exc


def memory_of(hit: Hit) -> dict[str, Any]:
    """A hit as a tool shows it to a model: its text, what it is, its score, the episodes
    it rests on and, for a turn, its conversation (to tell earlier ones apart)."""
    out = {"text": hit.text, "kind": hit.kind, "id": hit.id, "score": hit.score}
    session = hit.metadata.get("session")
    return {**out, "sources": list(hit.sources), **({"session": session} if session else {})}
