"""The Python API: an async core (:class:`AsyncMemory`) and a thin sync facade (:class:`Memory`).

Raw text is validated and committed before anything is derived from it. A batch is
written with its vectors in one transaction: if the embedder fails, nothing of the batch
is stored and the error says why, so an episode is never searchable by BM25 but invisible
to the dense route. The recipe's builders run after the commit (inline, from a queue, or
by hand; ``build.mode``), and their failures never undo or hide an episode. Ids stored
again, ``update``, ``history`` and the deletes live in :mod:`memstrata.updates`, ``get``
and ``list`` in :mod:`memstrata.listing`: mixins of :class:`AsyncMemory`. The four
memory classes share one set of verbs (:mod:`memstrata.verbs`).

Nothing here names a design: recipes pick builders, routes and answerers by name from
the registry (:mod:`memstrata.engine`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from memstrata.blas import limit_blas_threads
from memstrata.building import Building
from memstrata.config import Config
from memstrata.embed.base import Embedder
from memstrata.engine import Answer, Engine, Reading, Registry, ShowNode
from memstrata.engine.worker import Worker
from memstrata.errors import (
    ConflictError,
    InvalidInputError,
    MemstrataError,
    NamespaceNotFoundError,
)
from memstrata.factory import make_llm, make_registry, shared_default_embedder
from memstrata.ingest import EpisodeLike, decode_utf8, prepare_episode
from memstrata.listing import EpisodeReader
from memstrata.llm import LLMClient
from memstrata.models import Episode, SearchResult
from memstrata.opening import Opening
from memstrata.reading import read_document
from memstrata.retrieval.context import fit_to_budget
from memstrata.store import AddReport, SearchFilters, Store, open_store
from memstrata.store.base import check_namespace
from memstrata.surfaces import Surfaces
from memstrata.updates import EpisodeWriter

Progress = Callable[[int], None]
logger = logging.getLogger("memstrata")
__all__ = ["AsyncMemory", "decode_utf8", "prepare_episode"]


class AsyncMemory(EpisodeWriter, EpisodeReader, Building, Surfaces):
    """Long-term memory over one store. Open with :meth:`open`; close or use ``async with``."""

    def __init__(
        self, config: Config, store: Store, embedder: Embedder, registry: Registry | None = None
    ) -> None:
        self.config = config
        self.store = store
        self.embedder = embedder
        self._llm: LLMClient | None = None
        self._llm_made = False
        self.engine = Engine(
            store,
            embedder,
            registry or make_registry(config),
            llm=lambda: self.llm,
            build=config.build,
            retrieval=config.retrieval.model_dump(exclude={"tier"}),
            search_tier=config.retrieval.tier,
        )
        self.worker = Worker(self.engine, config.recipe, config.build.poll_s)

    @property
    def llm(self) -> LLMClient | None:
        """The configured LLM client (None without one), built on first use; its calls are
        accounted in the store. Assign a client to use a backend no config names."""
        if not self._llm_made:
            self.llm = make_llm(self.config, self.store)
        return self._llm

    @llm.setter
    def llm(self, client: LLMClient | None) -> None:
        self._llm, self._llm_made = client, True

    @classmethod
    def open(
        cls,
        path_or_url: str | Path | None = None,
        *,
        config: Config | None = None,
        embedder: Embedder | None = None,
        **overrides: Any,
    ) -> Opening[AsyncMemory]:
        """Open a store: ``m = await AsyncMemory.open(path)``, or ``async with
        AsyncMemory.open(path) as m:`` (closed on exit). ``overrides`` are configuration
        keys (dotted or nested: ``recipe="mnemis"``, ``**{"build.mode": "queue"}``)."""
        return Opening(cls._open(path_or_url, config, embedder, overrides))

    @classmethod
    async def _open(
        cls,
        path_or_url: str | Path | None,
        config: Config | None,
        embedder: Embedder | None,
        overrides: dict[str, Any],
    ) -> AsyncMemory:
        if config is None:
            cfg = Config.load(**overrides)
        else:
            cfg = config.with_overrides(**overrides) if overrides else config
        if path_or_url is not None:
            cfg = cfg.model_copy(update={"store": str(path_or_url)})
        registry = await asyncio.to_thread(make_registry, cfg)  # before anything is opened
        limit_blas_threads()
        store = await asyncio.to_thread(open_store, cfg.store, **cfg.indexes.model_dump())
        try:
            if embedder is None:
                embedder = await asyncio.to_thread(shared_default_embedder, cfg)
            memory = cls(cfg, store, embedder, registry)
            await asyncio.to_thread(memory.engine.adopt_unowned)
            return memory
        except BaseException:
            await asyncio.to_thread(store.close)
            raise

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop the background worker, then close the store; any verb after it raises
        :class:`~memstrata.StoreClosedError`."""
        await self.stop_worker()
        await asyncio.to_thread(self.store.close)

    def _ns(self, namespace: str | None) -> str:
        """The given namespace (checked: "" is an error, not the default) or the default."""
        return check_namespace(self.config.namespace if namespace is None else namespace)

    async def _known(self, namespace: str) -> str:
        """The namespace, if it holds something; the error names no other namespace (a
        service's caller must learn nothing of other tenants; the CLI adds its hint)."""
        if not await asyncio.to_thread(self.store.has_namespace, namespace):
            raise NamespaceNotFoundError(namespace)
        return namespace

    async def add(
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
        """Remember one piece of text; returns the stored episode. An ``id`` stored with
        the same content is a no-op; with other content :class:`ConflictError`, unless
        ``replace`` (then as :meth:`update`). ``at`` is ``occurred_at`` under the name
        import lines use, so ``add(**line)`` works."""
        item: dict[str, Any] = dict(text=text, id=id, speaker=speaker, role=role, at=at)
        item.update(occurred_at=occurred_at, session=session, metadata=metadata or {})
        prepared = prepare_episode(item, self.config)
        ns = self._ns(namespace)
        report = await asyncio.to_thread(self._write_batch, ns, [prepared], replace)
        if report.conflicts:
            raise ConflictError(report.conflicts, ns)
        await (self._after_removal(ns) if report.updated else self._fold_in(ns))
        return (await asyncio.to_thread(self.store.get_episodes, ns, [prepared.external_id]))[0]

    async def add_many(
        self,
        items: Iterable[EpisodeLike],
        *,
        namespace: str | None = None,
        batch_size: int = 256,
        progress: Progress | None = None,
        replace: bool = False,
    ) -> AddReport:
        """Remember many episodes, committed batch by batch (each batch all or nothing).

        Items are strings, :class:`EpisodeIn` or mappings of :data:`EPISODE_KEYS` (the
        shape of an import line; an unknown key is an error, not dropped). Every item is
        validated before the first write, so one bad item stops the call without storing
        a partial batch. Inline builders run once, after the last batch.
        Ids stored with other content are reported in ``conflicts`` and left unchanged,
        or with ``replace`` updated (``updated``; old versions kept, see :meth:`update`).
        """
        ns = self._ns(namespace)
        prepared = []
        for i, item in enumerate(items):
            try:
                prepared.append(prepare_episode(item, self.config))
            except InvalidInputError as exc:
                raise InvalidInputError(f"item {i}: {exc}") from exc
        total = await self._write_batches(ns, prepared, batch_size, replace, progress)
        await (self._after_removal(ns) if total.updated else self._fold_in(ns))
        return total

    async def _fold_in(self, namespace: str) -> None:
        """``inline`` mode: the recipe's builders take the new episodes now. Their failures
        are recorded for retry and never fail the add: the episodes are committed."""
        if self.config.build_mode != "inline":
            return
        try:
            ctx = self.engine.context(namespace)
            for builder in self.engine.builders(self.config.recipe):
                await self.engine.drain(ctx, namespace, builder, describe=False)
        except MemstrataError as exc:
            logger.warning("inline build of %r failed; episodes stay queued: %s", namespace, exc)

    async def search(
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
        found = await self.search_many(
            [query],
            namespace=namespace,
            k=k,
            recipe=recipe,
            filters=filters,
            max_tokens=max_tokens,
            adaptive=adaptive,
        )
        return found[0]

    async def search_many(
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
        """Batch search: queries are embedded together, which is much faster per query.
        Each result says how many episodes the recipe has not folded in yet. With
        ``adaptive``, each result is cut to as many source turns as its evidence needs (at
        most ``k``; ``budgets.evidence_keep``, :mod:`memstrata.retrieval.evidence`)."""
        for q in queries:
            if not isinstance(q, str) or not q.strip():
                raise InvalidInputError("search query is empty")
        if k is not None and k <= 0:
            raise InvalidInputError(f"k must be positive, got {k}")
        ns = await self._known(self._ns(namespace))
        name = recipe or self.config.recipe
        kk = self.config.budgets.episodes if k is None else k
        keep = self.config.budgets.evidence_keep if adaptive else None
        per_query = await self.engine.search(ns, queries, kk, name, filters, keep)
        pending = await self.engine.pending(ns, name)
        budget = self.config.budgets.max_tokens if max_tokens == -1 else max_tokens
        fitted = await asyncio.to_thread(lambda: [fit_to_budget(h, budget) for h in per_query])
        return [
            SearchResult(
                query=query,
                namespace=ns,
                hits=kept,
                context=context,
                context_tokens=tokens,
                pending=pending,
            )
            for query, (kept, context, tokens) in zip(queries, fitted, strict=True)
        ]

    async def ask(
        self,
        question: str,
        *,
        namespace: str | None = None,
        k: int | None = None,
        recipe: str | None = None,
        filters: SearchFilters | None = None,
        max_tokens: int | None = -1,
        adaptive: bool = False,
    ) -> Answer:
        """Search, then answer from the hits with the recipe's answerer: the answer cites
        episode ids, or abstains when the hits do not hold it. Takes search's options;
        the recipe's answerer may set its own context budget (``context_tokens``), which
        stands in for the configured one."""
        if max_tokens == -1:
            own = self.engine.recipe(recipe or self.config.recipe).answerer.context_tokens
            max_tokens = -1 if own is None else own
        result = await self.search(
            question,
            namespace=namespace,
            k=k,
            recipe=recipe,
            filters=filters,
            max_tokens=max_tokens,
            adaptive=adaptive,
        )
        name = recipe or self.config.recipe
        return await self.engine.answer(result.namespace, question, result.hits, name)

    async def read(self, text: str | bytes, question: str, **kwargs: Any) -> Reading:
        """Read one long document for one question with a design's reader (``design``,
        ``tier``, ``graph_only``, ``params``; :mod:`memstrata.reading`)."""
        return await read_document(self, text, question, **kwargs)

    async def show(self, name: str, *, namespace: str | None = None) -> list[ShowNode]:
        """What the designs hold under ``name`` (a category, an entity, ...); empty if none."""
        return await self.engine.show(await self._known(self._ns(namespace)), name)

    async def recipes(self) -> list[dict[str, Any]]:
        """Every recipe: name, description, builders, routes, answerer, where it comes from."""
        return self.engine.recipe_summaries()

    async def namespaces(self) -> list[str]:
        """The namespaces that hold episodes, by name."""
        return await asyncio.to_thread(self.store.namespaces)

    async def stats(self, namespace: str | None = None) -> dict[str, Any]:
        """Counts per namespace, build queue per builder, LLM usage per stage, file size."""
        if namespace is not None:
            await self._known(check_namespace(namespace))
        data = await asyncio.to_thread(self.engine.stats, namespace, self.config.recipe)
        return {"embedder": self.embedder.model_id, "build_mode": self.config.build_mode, **data}


def __getattr__(name: str) -> Any:
    """``Memory`` (:mod:`memstrata.facade`, made over this module) on first use."""
    if name != "Memory":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from memstrata.facade import Memory

    return Memory
