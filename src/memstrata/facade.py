"""The synchronous facade: :class:`Memory` runs :class:`AsyncMemory` on a loop of its own
thread (:mod:`memstrata.runner`), so one ``Memory`` may be shared by many threads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memstrata.config import Config
from memstrata.embed.base import Embedder
from memstrata.errors import StoreClosedError
from memstrata.memory import AsyncMemory
from memstrata.redact import redact
from memstrata.runner import Blocking, LoopThread, blocking


class Memory(Blocking):
    """Synchronous facade over :class:`AsyncMemory` for scripts, notebooks and threaded
    applications. Every verb takes the same arguments and returns the same result as the
    async one; calls from several threads at once run side by side."""

    _inner: AsyncMemory

    @classmethod
    def open(
        cls,
        path_or_url: str | Path | None = None,
        *,
        config: Config | None = None,
        embedder: Embedder | None = None,
        **overrides: Any,
    ) -> Memory:
        """Open a store (a path, ``sqlite:///...``, ``postgresql://...`` or ``:memory:``);
        use ``with``. ``overrides`` are configuration keys (``recipe="mnemis"``,
        ``**{"build.mode": "queue"}``) applied over ``config`` or the loaded configuration."""
        where: list[str] = []  # the store's location, once it is open
        runner = LoopThread(lambda: StoreClosedError(redact(where[0])))

        async def opened() -> AsyncMemory:
            return await AsyncMemory.open(
                path_or_url, config=config, embedder=embedder, **overrides
            )

        try:
            inner = runner.run(opened())
        except BaseException:
            runner.close()
            raise
        where.append(inner.store.url.removeprefix("sqlite:///"))
        memory = cls()
        memory._start(inner, runner)
        return memory

    def __getattr__(self, name: str) -> Any:
        """``config``, ``store``, ``embedder``, ``llm`` and ``engine`` as they are."""
        if name in {"config", "store", "embedder", "llm", "engine"}:
            return getattr(self._inner, name)
        raise AttributeError(name)

    add = blocking(AsyncMemory.add)
    add_many = blocking(AsyncMemory.add_many)
    update = blocking(AsyncMemory.update)
    delete = blocking(AsyncMemory.delete)
    delete_namespace = blocking(AsyncMemory.delete_namespace)
    history = blocking(AsyncMemory.history)
    get = blocking(AsyncMemory.get)
    list = blocking(AsyncMemory.list)
    search = blocking(AsyncMemory.search)
    search_many = blocking(AsyncMemory.search_many)
    ask = blocking(AsyncMemory.ask)
    show = blocking(AsyncMemory.show)
    namespaces = blocking(AsyncMemory.namespaces)
    stats = blocking(AsyncMemory.stats)
    recipes = blocking(AsyncMemory.recipes)
    build = blocking(AsyncMemory.build)
    retry = blocking(AsyncMemory.retry)
    work = blocking(AsyncMemory.work)
    read = blocking(AsyncMemory.read)
