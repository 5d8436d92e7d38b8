"""The synchronous facade: :class:`Memory` runs :class:`AsyncMemory` on its own event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memstrata.engine import Answer, BuildReport, ShowNode, WorkerReport
from memstrata.ingest import EpisodeLike
from memstrata.memory import AsyncMemory
from memstrata.models import Episode, SearchResult
from memstrata.store import AddReport


class Memory:
    """Synchronous facade over :class:`AsyncMemory` for scripts and notebooks.

    It runs its own event loop, so it must not be used from inside a running loop
    (use :class:`AsyncMemory` there). Every verb takes the same arguments as the async one.
    """

    def __init__(self, inner: AsyncMemory, loop: asyncio.AbstractEventLoop) -> None:
        self._inner = inner
        self._loop = loop

    @classmethod
    def open(cls, path_or_url: str | Path | None = None, **kwargs: Any) -> Memory:
        loop = asyncio.new_event_loop()
        try:
            inner = loop.run_until_complete(AsyncMemory.open(path_or_url, **kwargs))
        except BaseException:
            loop.close()
            raise
        return cls(inner, loop)

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def __getattr__(self, name: str) -> Any:
        """``config``, ``store``, ``llm``, ``engine`` and ``recipes`` as they are."""
        if name in {"config", "store", "embedder", "llm", "engine", "recipes"}:
            return getattr(self._inner, name)
        raise AttributeError(name)

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self._loop.is_closed():
            self._run(self._inner.close())
            self._loop.close()

    def add(self, text: str | bytes, **kw: Any) -> Episode:
        return self._run(self._inner.add(text, **kw))

    def add_many(self, items: Iterable[EpisodeLike], **kw: Any) -> AddReport:
        return self._run(self._inner.add_many(items, **kw))

    def search(self, query: str, **kw: Any) -> SearchResult:
        return self._run(self._inner.search(query, **kw))

    def search_many(self, queries: list[str], **kw: Any) -> list[SearchResult]:
        return self._run(self._inner.search_many(queries, **kw))

    def ask(self, question: str, **kw: Any) -> Answer:
        return self._run(self._inner.ask(question, **kw))

    def build(self, namespace: str | None = None, **kw: Any) -> list[BuildReport]:
        return self._run(self._inner.build(namespace, **kw))

    def retry(self, namespace: str | None = None, **kw: Any) -> int:
        return self._run(self._inner.retry(namespace, **kw))

    def work(self, **kw: Any) -> WorkerReport:
        return self._run(self._inner.work(**kw))

    def show(self, name: str, **kw: Any) -> list[ShowNode]:
        return self._run(self._inner.show(name, **kw))

    def get(self, ids: list[str], **kw: Any) -> list[Episode]:
        return self._run(self._inner.get(ids, **kw))

    def delete(self, ids: list[str] | None = None, **kw: Any) -> int:
        return self._run(self._inner.delete(ids, **kw))

    def namespaces(self) -> list[str]:
        return self._run(self._inner.namespaces())

    def stats(self, namespace: str | None = None) -> dict[str, Any]:
        return self._run(self._inner.stats(namespace))
