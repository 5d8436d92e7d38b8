"""The synchronous facade: :class:`Memory` runs :class:`AsyncMemory` on its own event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from memstrata.config import Config
from memstrata.embed.base import Embedder
from memstrata.engine import Answer, BuildReport, Reading, ShowNode, WorkerReport
from memstrata.errors import StoreClosedError
from memstrata.ingest import EpisodeLike
from memstrata.memory import AsyncMemory
from memstrata.models import Episode, SearchResult
from memstrata.redact import redact
from memstrata.store import AddReport, SearchFilters
from memstrata.store.base import DeleteReport, EpisodeVersion
from memstrata.updates import KEEP, Keep


class Memory:
    """Synchronous facade over :class:`AsyncMemory` for scripts and notebooks.

    It runs its own event loop, so it must not be used from inside a running loop
    (use :class:`AsyncMemory` there). Every verb takes the same arguments as the async one.
    """

    def __init__(self, inner: AsyncMemory, loop: asyncio.AbstractEventLoop) -> None:
        self._inner = inner
        self._loop = loop

    @classmethod
    def open(
        cls,
        path_or_url: str | Path | None = None,
        *,
        config: Config | None = None,
        embedder: Embedder | None = None,
        **overrides: Any,
    ) -> Memory:
        """Open a store (a path, ``sqlite:///...`` or ``:memory:``); use ``with``.
        ``overrides`` are configuration keys (``recipe="mnemis"``, ``**{"build.mode":
        "queue"}``) applied over ``config`` or the loaded configuration."""
        loop = asyncio.new_event_loop()
        try:
            opening = AsyncMemory.open(path_or_url, config=config, embedder=embedder, **overrides)
            inner = loop.run_until_complete(opening)
        except BaseException:
            loop.close()
            raise
        return cls(inner, loop)

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        if self._loop.is_closed():
            # The same error AsyncMemory gives for a closed store; the verb's coroutine is
            # closed unstarted, so no "never awaited" warning follows the error.
            coro.close()
            raise StoreClosedError(redact(self._inner.store.url.removeprefix("sqlite:///")))
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
        """Close the store and the loop; closing twice is harmless, any other verb after
        it raises :class:`StoreClosedError`."""
        if not self._loop.is_closed():
            self._run(self._inner.close())
            self._loop.close()

    def add(
        self,
        text: str | bytes,
        *,
        namespace: str | None = None,
        id: str | None = None,
        speaker: str | None = None,
        role: str | None = None,
        occurred_at: datetime | str | None = None,
        session: str | None = None,
        metadata: dict[str, Any] | None = None,
        replace: bool = False,
        at: datetime | str | None = None,
    ) -> Episode:
        """Remember one piece of text; returns the stored episode. The recipe's builders
        fold it in now (``build.mode = inline``) or later (``queue``, ``manual``). An id
        stored with other content is a ``ConflictError`` unless ``replace``. ``at`` is
        ``occurred_at`` as import lines name it (``add(**line)``)."""
        return self._run(
            self._inner.add(
                text,
                namespace=namespace,
                id=id,
                speaker=speaker,
                role=role,
                occurred_at=occurred_at,
                session=session,
                metadata=metadata,
                replace=replace,
                at=at,
            )
        )

    def add_many(
        self,
        items: Iterable[EpisodeLike],
        *,
        namespace: str | None = None,
        batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
        replace: bool = False,
    ) -> AddReport:
        """Remember many episodes (strings, ``EpisodeIn`` or dicts shaped like import
        lines: ``id``, ``text``, ``speaker``, ``at``, ...), batch by batch; every item is
        validated before the first write, and an unknown key is an error. Ids stored with
        other content are reported in ``conflicts`` and left unchanged, unless ``replace``."""
        return self._run(
            self._inner.add_many(
                items,
                namespace=namespace,
                batch_size=batch_size,
                progress=progress,
                replace=replace,
            )
        )

    def search(
        self,
        query: str,
        *,
        namespace: str | None = None,
        k: int | None = None,
        recipe: str | None = None,
        filters: SearchFilters | None = None,
        max_tokens: int | None = -1,
        adaptive: bool = False,
    ) -> SearchResult:
        """Best hits for ``query``, each with its sources, fitted to a token budget
        (``max_tokens``: -1 for the configured one, None for no limit). ``k`` is the
        number of episodes; other kinds follow the recipe's budgets. ``adaptive`` cuts
        the hits to as many source turns as the evidence needs (at most ``k``)."""
        return self.search_many(
            [query],
            namespace=namespace,
            k=k,
            recipe=recipe,
            filters=filters,
            max_tokens=max_tokens,
            adaptive=adaptive,
        )[0]

    def search_many(
        self,
        queries: list[str],
        *,
        namespace: str | None = None,
        k: int | None = None,
        recipe: str | None = None,
        filters: SearchFilters | None = None,
        max_tokens: int | None = -1,
        adaptive: bool = False,
    ) -> list[SearchResult]:
        """:meth:`search` for many queries at once (embedded together: faster)."""
        return self._run(
            self._inner.search_many(
                queries,
                namespace=namespace,
                k=k,
                recipe=recipe,
                filters=filters,
                max_tokens=max_tokens,
                adaptive=adaptive,
            )
        )

    def read(self, text: str | bytes, question: str, **kwargs: Any) -> Reading:
        """Read one long document for one question (see :meth:`AsyncMemory.read`)."""
        return self._run(self._inner.read(text, question, **kwargs))

    def ask(
        self,
        question: str,
        *,
        namespace: str | None = None,
        k: int | None = None,
        recipe: str | None = None,
        filters: SearchFilters | None = None,
    ) -> Answer:
        """Search, then answer from the hits with the recipe's answerer: the answer cites
        episode ids, or abstains when the hits do not hold it."""
        return self._run(
            self._inner.ask(question, namespace=namespace, k=k, recipe=recipe, filters=filters)
        )

    def build(
        self,
        namespace: str | None = None,
        *,
        recipe: str | None = None,
        tier: str | None = None,
        rebuild: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> list[BuildReport]:
        """Fold every pending episode into the recipe's builders; one report each."""
        return self._run(
            self._inner.build(
                namespace, recipe=recipe, tier=tier, rebuild=rebuild, progress=progress
            )
        )

    def retry(self, namespace: str | None = None, *, builder: str | None = None) -> int:
        """Queue failed enrichments again; returns how many episodes."""
        return self._run(self._inner.retry(namespace, builder=builder))

    def work(
        self,
        *,
        recipe: str | None = None,
        namespaces: list[str] | None = None,
        once: bool = True,
    ) -> WorkerReport:
        """Run the queue worker here, until nothing is pending (``once``)."""
        return self._run(self._inner.work(recipe=recipe, namespaces=namespaces, once=once))

    def show(self, name: str, *, namespace: str | None = None) -> list[ShowNode]:
        """What the designs hold under ``name`` (a category, an entity, ...)."""
        return self._run(self._inner.show(name, namespace=namespace))

    def get(self, ids: list[str], *, namespace: str | None = None) -> list[Episode]:
        """The stored episodes with these ids (unknown ids are left out)."""
        return self._run(self._inner.get(ids, namespace=namespace))

    def delete(self, ids: list[str] | None = None, *, namespace: str | None = None) -> DeleteReport:
        """Delete episodes (or the whole namespace) and what was derived from them; the
        count removed, whose ``missing`` names given ids that were not stored."""
        return self._run(self._inner.delete(ids, namespace=namespace))

    def namespaces(self) -> list[str]:
        return self._run(self._inner.namespaces())

    def stats(self, namespace: str | None = None) -> dict[str, Any]:
        """Counts, the build queue per builder, LLM usage per stage, file size."""
        return self._run(self._inner.stats(namespace))

    def update(
        self,
        id: str,
        text: str | bytes,
        *,
        namespace: str | None = None,
        speaker: str | None | Keep = KEEP,
        role: str | None | Keep = KEEP,
        occurred_at: datetime | str | None | Keep = KEEP,
        session: str | None | Keep = KEEP,
        metadata: dict[str, Any] | None | Keep = KEEP,
    ) -> Episode:
        """Correct an episode: the old version goes to :meth:`history`, what was derived
        from it is derived again, and searches see only the new text. Context fields
        left out keep their stored values; ``None`` clears one."""
        return self._run(
            self._inner.update(
                id,
                text,
                namespace=namespace,
                speaker=speaker,
                role=role,
                occurred_at=occurred_at,
                session=session,
                metadata=metadata,
            )
        )

    def history(self, id: str, *, namespace: str | None = None) -> list[EpisodeVersion]:
        """The versions of episode ``id`` that updates replaced, oldest first."""
        return self._run(self._inner.history(id, namespace=namespace))
