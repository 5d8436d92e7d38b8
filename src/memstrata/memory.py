"""The Python API: an async core (:class:`AsyncMemory`) and a thin sync facade (:class:`Memory`).

Raw text is validated and committed before anything is derived from it. A batch is
written with its vectors in one transaction: if the embedder fails, nothing of the batch
is stored and the error says why, so an episode is never searchable by BM25 but invisible
to the dense route. LLM enrichment (the structure builders) comes after, on stored
episodes. Episode ids are the caller's (or generated); adding an id that is already stored
changes nothing, which makes imports idempotent and safe to re-run after a crash.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from memstrata.config import Config
from memstrata.embed.base import Embedder
from memstrata.embed.cache import ensure_embedded
from memstrata.errors import ConfigError, InvalidInputError, NamespaceNotFoundError
from memstrata.llm import LLMClient, ResponseCache, make_backend
from memstrata.models import Episode, EpisodeIn, SearchResult
from memstrata.recipes import BUILT_RECIPES, system1_params
from memstrata.retrieval import documents
from memstrata.retrieval.context import fit_to_budget
from memstrata.retrieval.system1 import EpisodeRoute
from memstrata.store import AddReport, PreparedEpisode, SearchFilters, Store, open_store

EpisodeLike = EpisodeIn | PreparedEpisode | Mapping[str, Any] | str
Progress = Callable[[int], None]


def make_embedder(config: Config) -> Embedder:
    cfg = config.embedder
    if cfg.kind == "openai":
        from memstrata.embed.openai_http import OpenAIEmbedder

        if not (cfg.base_url and cfg.model and cfg.dim):
            raise ConfigError("embedder kind 'openai' needs base_url, model and dim")
        key = cfg.api_key.get_secret_value() if cfg.api_key else None
        return OpenAIEmbedder(cfg.base_url, cfg.model, cfg.dim, api_key=key)
    from memstrata.embed.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


def make_llm(config: Config, store: Store, namespace: str | None = None) -> LLMClient | None:
    """The configured LLM client, accounting into ``store``; None on the heuristic tier.

    Responses are cached beside the store file (``<store>.llm-cache``) unless
    ``llm.cache_dir`` says otherwise; an in-memory store gets no cache.
    """
    cfg = config.llm
    if cfg.kind == "none":
        return None
    options: dict[str, Any]
    if cfg.kind == "openai":
        if not (cfg.base_url and cfg.model):
            raise ConfigError("llm kind 'openai' needs base_url and model")
        options = {
            "base_url": cfg.base_url,
            "model": cfg.model,
            "api_key": cfg.api_key.get_secret_value() if cfg.api_key else None,
            "timeout": cfg.timeout_s,
        }
    else:
        options = {"model_path": cfg.model_path, "n_threads": cfg.threads}
    cache = None
    store_path = store.url.removeprefix("sqlite:///")
    if cfg.cache_dir:
        folder = Path(cfg.cache_dir).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        cache = ResponseCache(folder / "llm-cache.sqlite")
    elif store_path != ":memory:":
        cache = ResponseCache(store_path + ".llm-cache")
    return LLMClient(
        make_backend(cfg.kind, **options),
        cache=cache,
        usage=store,
        max_retries=cfg.max_retries,
        namespace=namespace,
        concurrency=cfg.concurrency,
    )


_EMBEDDERS: dict[str, Embedder] = {}


def _shared_default_embedder(config: Config) -> Embedder:
    """One ONNX session per process for the default model: it is 23 MB and slow to load."""
    if config.embedder.kind != "minilm":
        return make_embedder(config)
    if "minilm" not in _EMBEDDERS:
        _EMBEDDERS["minilm"] = make_embedder(config)
    return _EMBEDDERS["minilm"]


def prepare_episode(item: EpisodeLike, config: Config) -> PreparedEpisode:
    """Validate one input and compute its index views; raises :class:`InvalidInputError`."""
    if isinstance(item, PreparedEpisode):
        return item
    if isinstance(item, str | bytes):
        item = {"text": item}
    if isinstance(item, Mapping):
        raw = dict(item)
        text = raw.get("text")
        if isinstance(text, bytes):
            raw["text"] = decode_utf8(text)
        try:
            ep = EpisodeIn.model_validate(raw)
        except ValidationError as exc:
            raise InvalidInputError(f"invalid episode: {_first_error(exc)}") from exc
    else:
        ep = item
    text = ep.text
    if not text.strip():
        what = f"episode {ep.id!r}" if ep.id else "episode"
        raise InvalidInputError(f"{what} has empty text; nothing to remember")
    if len(text) > config.max_episode_chars:
        raise InvalidInputError(
            f"episode {ep.id or ''} has {len(text):,} characters, more than the limit of "
            f"{config.max_episode_chars:,} (max_episode_chars); split it into chunks"
        )
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"episode {ep.id or ''} text is not valid Unicode ({exc.reason} at position "
            f"{exc.start})"
        ) from exc
    external_id = ep.id or uuid.uuid4().hex
    metadata = dict(ep.metadata)
    return PreparedEpisode(
        external_id=external_id,
        text=text,
        speaker=ep.speaker,
        role=ep.role,
        occurred_at=ep.occurred_at,
        session=ep.session,
        metadata=metadata,
        content_hash=hashlib.sha256(encoded).digest()[:16],
        index_text=documents.index_text(text, ep.speaker, metadata),
        embed_hash=None,
    )


def decode_utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"text is not valid UTF-8: byte 0x{data[exc.start]:02x} at position {exc.start}"
        ) from exc


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "input"
    return f"{where}: {err['msg']}"


class AsyncMemory:
    """Long-term memory over one store. Open with :meth:`open`; close or use ``async with``."""

    def __init__(self, config: Config, store: Store, embedder: Embedder) -> None:
        self.config = config
        self.store = store
        self.embedder = embedder
        self._routes: dict[str, EpisodeRoute] = {}
        self._graph_routes: dict[str, Any] = {}
        self._llm: LLMClient | None = None
        self._graphs: Any = None

    @property
    def llm(self) -> LLMClient | None:
        """The configured LLM client (None without one), built on first use; its calls are
        accounted in the store and shown by :meth:`stats`."""
        if self._llm is None:
            self._llm = make_llm(self.config, self.store)
        return self._llm

    @classmethod
    async def open(
        cls,
        path_or_url: str | Path | None = None,
        *,
        config: Config | None = None,
        embedder: Embedder | None = None,
        **overrides: Any,
    ) -> AsyncMemory:
        if config is None:
            cfg = Config.load(**overrides)
        elif overrides:
            cfg = config.with_overrides(**overrides)
        else:
            cfg = config
        if path_or_url is not None:
            cfg = cfg.model_copy(update={"store": str(path_or_url)})
        store = await asyncio.to_thread(open_store, cfg.store)
        try:
            emb = (
                embedder
                if embedder is not None
                else await asyncio.to_thread(_shared_default_embedder, cfg)
            )
        except BaseException:
            await asyncio.to_thread(store.close)
            raise
        return cls(cfg, store, emb)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await asyncio.to_thread(self.store.close)

    # writing ----------------------------------------------------------------------------
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
    ) -> Episode:
        """Remember one piece of text; returns the stored episode."""
        item = {
            "text": text,
            "id": id,
            "speaker": speaker,
            "role": role,
            "occurred_at": occurred_at,
            "session": session,
            "metadata": metadata or {},
        }
        prepared = prepare_episode(item, self.config)
        ns = namespace or self.config.namespace
        await self._write_batch(ns, [prepared])
        return (await asyncio.to_thread(self.store.get_episodes, ns, [prepared.external_id]))[0]

    async def add_many(
        self,
        items: Iterable[EpisodeLike],
        *,
        namespace: str | None = None,
        batch_size: int = 256,
        progress: Progress | None = None,
    ) -> AddReport:
        """Remember many episodes, committed batch by batch (each batch all or nothing).

        Every item is validated before the first write, so one bad item stops the call
        without storing a partial batch.
        """
        ns = namespace or self.config.namespace
        prepared = []
        for i, item in enumerate(items):
            try:
                prepared.append(prepare_episode(item, self.config))
            except InvalidInputError as exc:
                raise InvalidInputError(f"item {i}: {exc}") from exc
        total = AddReport()
        for start in range(0, len(prepared), batch_size):
            batch = prepared[start : start + batch_size]
            report = await self._write_batch(ns, batch)
            total.added.extend(report.added)
            total.existing.extend(report.existing)
            if progress:
                progress(len(batch))
        return total

    async def _write_batch(self, namespace: str, batch: list[PreparedEpisode]) -> AddReport:
        return await asyncio.to_thread(self._write_batch_sync, namespace, batch)

    def _write_batch_sync(self, namespace: str, batch: list[PreparedEpisode]) -> AddReport:
        known = self.store.existing_ids(namespace, [p.external_id for p in batch])
        fresh = [p for p in batch if p.external_id not in known]
        if fresh:
            texts = [documents.embed_text(p.text, p.speaker, p.metadata) for p in fresh]
            hashes = ensure_embedded(self.store, self.embedder, texts)
            for p, h in zip(fresh, hashes, strict=True):
                p.embed_hash = h
        report = self.store.add_episodes(namespace, fresh)
        report.existing.extend(p.external_id for p in batch if p.external_id in known)
        return report

    # reading ----------------------------------------------------------------------------
    def _route(self, recipe: str | None) -> EpisodeRoute:
        name = recipe or self.config.recipe
        if name not in self._routes:
            self._routes[name] = EpisodeRoute(
                self.store, self.embedder, system1_params(self.config, name)
            )
        return self._routes[name]

    def _graph_cache(self) -> Any:
        from memstrata.structures.mnemis import GraphCache

        if self._graphs is None:
            self._graphs = GraphCache(self.store, self.embedder)
        return self._graphs

    def _tier(self, tier: str | None) -> Literal["heuristic", "llm"]:
        if tier is None:
            return "llm" if self.config.llm.kind != "none" else "heuristic"
        if tier == "heuristic":
            return "heuristic"
        if tier == "llm":
            return "llm"
        raise ConfigError(f"unknown tier {tier!r}; choose heuristic or llm")

    async def build(
        self,
        namespace: str | None = None,
        *,
        recipe: str = "mnemis",
        tier: str | None = None,
        rebuild: bool = False,
        progress: Progress | None = None,
    ) -> Any:
        """Run a recipe's builders over what the namespace holds; only new episodes are
        processed unless ``rebuild``. Without an LLM configured the tier is ``heuristic``.
        Returns the builder's report (counts, layers, seconds, LLM usage per stage)."""
        from memstrata.structures.mnemis import MnemisBuilder

        ns = namespace or self.config.namespace
        if recipe not in BUILT_RECIPES:
            raise ConfigError(
                f"recipe {recipe!r} has nothing to build; choose {sorted(BUILT_RECIPES)}"
            )
        if not await asyncio.to_thread(self.store.has_namespace, ns):
            raise NamespaceNotFoundError(ns)
        chosen = self._tier(tier)
        llm = self.llm if chosen == "llm" else None
        if llm is not None:
            llm.namespace = ns
        builder = MnemisBuilder(
            self.store, self.embedder, tier=chosen, llm=llm, cache=self._graph_cache()
        )
        return await builder.build(ns, rebuild=rebuild, progress=progress)

    def _graph_route(self, recipe: str) -> Any:
        from memstrata.retrieval.mnemis import MnemisRoute

        if recipe not in self._graph_routes:
            selector = reranker = None
            if self._tier(None) == "llm" and self.llm is not None:
                from memstrata.prompts.mnemis import llm_reranker, node_selector

                selector, reranker = node_selector(self.llm), llm_reranker(self.llm)
            self._graph_routes[recipe] = MnemisRoute(
                self.store,
                self.embedder,
                self._route(recipe),
                self._graph_cache(),
                selector=selector,
                reranker=reranker,
            )
        return self._graph_routes[recipe]

    async def search(
        self,
        query: str,
        *,
        namespace: str | None = None,
        k: int | None = None,
        recipe: str | None = None,
        filters: SearchFilters | None = None,
        max_tokens: int | None = -1,
    ) -> SearchResult:
        """Best episodes for ``query`` with their sources, fitted to the token budget."""
        return (
            await self.search_many(
                [query],
                namespace=namespace,
                k=k,
                recipe=recipe,
                filters=filters,
                max_tokens=max_tokens,
            )
        )[0]

    async def search_many(
        self,
        queries: list[str],
        *,
        namespace: str | None = None,
        k: int | None = None,
        recipe: str | None = None,
        filters: SearchFilters | None = None,
        max_tokens: int | None = -1,
    ) -> list[SearchResult]:
        """Batch search: queries are embedded together, which is much faster per query."""
        ns = namespace or self.config.namespace
        name = recipe or self.config.recipe
        if name in BUILT_RECIPES:
            self._check_search(queries, ns, k)
            route = self._graph_route(name)
            kk = self.config.budgets.episodes if k is None else k
            per_query = await route.search(ns, queries, kk, filters)
            return self._results(queries, ns, per_query, max_tokens)
        return await asyncio.to_thread(
            self._search_sync, queries, ns, k, recipe, filters, max_tokens
        )

    def _check_search(self, queries: list[str], namespace: str, k: int | None) -> None:
        for q in queries:
            if not isinstance(q, str) or not q.strip():
                raise InvalidInputError("search query is empty")
        if not self.store.has_namespace(namespace):
            raise NamespaceNotFoundError(namespace)
        if k is not None and k <= 0:
            raise InvalidInputError(f"k must be positive, got {k}")

    def _results(
        self,
        queries: list[str],
        namespace: str,
        per_query: list[list[Any]],
        max_tokens: int | None,
    ) -> list[SearchResult]:
        budget = self.config.budgets.max_tokens if max_tokens == -1 else max_tokens
        results = []
        for query, hits in zip(queries, per_query, strict=True):
            kept, context, tokens = fit_to_budget(hits, budget)
            results.append(
                SearchResult(
                    query=query,
                    namespace=namespace,
                    hits=kept,
                    context=context,
                    context_tokens=tokens,
                )
            )
        return results

    def _search_sync(
        self,
        queries: list[str],
        namespace: str,
        k: int | None,
        recipe: str | None,
        filters: SearchFilters | None,
        max_tokens: int | None,
    ) -> list[SearchResult]:
        self._check_search(queries, namespace, k)
        k = self.config.budgets.episodes if k is None else k
        per_query = self._route(recipe).search(namespace, queries, k, filters)
        return self._results(queries, namespace, per_query, max_tokens)

    async def get(self, ids: list[str], *, namespace: str | None = None) -> list[Episode]:
        ns = namespace or self.config.namespace
        return await asyncio.to_thread(self.store.get_episodes, ns, ids)

    # deleting ---------------------------------------------------------------------------
    async def delete(self, ids: list[str] | None = None, *, namespace: str | None = None) -> int:
        """Delete episodes by id, or the whole namespace when ``ids`` is None.

        Derived records go along provenance. Returns the number of episodes removed.
        """
        ns = namespace or self.config.namespace
        if not await asyncio.to_thread(self.store.has_namespace, ns):
            raise NamespaceNotFoundError(ns)
        if ids is None:
            return await asyncio.to_thread(self.store.delete_namespace, ns)
        return await asyncio.to_thread(self.store.delete_episodes, ns, ids)

    # inspecting -------------------------------------------------------------------------
    async def namespaces(self) -> list[str]:
        return await asyncio.to_thread(self.store.namespaces)

    async def stats(self, namespace: str | None = None) -> dict[str, Any]:
        """Counts per namespace, LLM usage per stage (failures included), file size."""

        def collect() -> dict[str, Any]:
            if namespace is not None and not self.store.has_namespace(namespace):
                raise NamespaceNotFoundError(namespace)
            return {
                "store": self.store.url,
                "bytes": self.store.size_bytes(),
                "embedder": self.embedder.model_id,
                "namespaces": [s.model_dump() for s in self.store.stats(namespace)],
                "llm": self.store.llm_usage(namespace),
            }

        return await asyncio.to_thread(collect)


class Memory:
    """Synchronous facade over :class:`AsyncMemory` for scripts and notebooks.

    It runs its own event loop, so it must not be used from inside a running loop
    (use :class:`AsyncMemory` there).
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
        loop = asyncio.new_event_loop()
        try:
            inner = loop.run_until_complete(
                AsyncMemory.open(path_or_url, config=config, embedder=embedder, **overrides)
            )
        except BaseException:
            loop.close()
            raise
        return cls(inner, loop)

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    @property
    def config(self) -> Config:
        return self._inner.config

    @property
    def store(self) -> Store:
        return self._inner.store

    @property
    def llm(self) -> LLMClient | None:
        return self._inner.llm

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self._loop.is_closed():
            self._run(self._inner.close())
            self._loop.close()

    def add(self, text: str | bytes, **kwargs: Any) -> Episode:
        return self._run(self._inner.add(text, **kwargs))

    def add_many(self, items: Iterable[EpisodeLike], **kwargs: Any) -> AddReport:
        return self._run(self._inner.add_many(items, **kwargs))

    def search(self, query: str, **kwargs: Any) -> SearchResult:
        return self._run(self._inner.search(query, **kwargs))

    def search_many(self, queries: list[str], **kwargs: Any) -> list[SearchResult]:
        return self._run(self._inner.search_many(queries, **kwargs))

    def build(self, namespace: str | None = None, **kwargs: Any) -> Any:
        return self._run(self._inner.build(namespace, **kwargs))

    def get(self, ids: list[str], **kwargs: Any) -> list[Episode]:
        return self._run(self._inner.get(ids, **kwargs))

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> int:
        return self._run(self._inner.delete(ids, **kwargs))

    def namespaces(self) -> list[str]:
        return self._run(self._inner.namespaces())

    def stats(self, namespace: str | None = None) -> dict[str, Any]:
        return self._run(self._inner.stats(namespace))
