"""Building the configured parts: the registry of recipes, the embedder and the LLM client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memstrata.config import ChaosConfig, Config, LLMConfig
from memstrata.embed.base import Embedder
from memstrata.engine.registry import Registry
from memstrata.errors import ConfigError
from memstrata.llm import LLMClient, ResponseCache, make_backend
from memstrata.store import Store


def make_registry(config: Config) -> Registry:
    """The designs and recipes ``config`` may use, once its ``recipe`` is known to be one
    of them. Checked when a memory is opened, not when a configuration is read: knowing
    the recipes loads every design."""
    try:
        registry = Registry.load(config.recipes)
        registry.recipe(config.recipe)
    except ConfigError as exc:
        if str(exc).startswith("invalid configuration: "):
            raise
        raise ConfigError(f"invalid configuration: {exc}") from exc
    return registry


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
    if cfg.kind == "chaos":
        chaos = cfg.chaos or ChaosConfig()
        options = chaos.model_dump(exclude={"inner"})
        try:
            backend = make_backend(
                "chaos",
                inner=make_backend(chaos.inner, **_backend_options(cfg, chaos.inner)),
                **options,
            )
        except ValueError as exc:
            raise ConfigError(f"llm kind 'chaos': {exc}") from exc
    else:
        backend = make_backend(cfg.kind, **_backend_options(cfg, cfg.kind))
    path = response_cache_path(config, store)
    cache = None if path is None else ResponseCache(path)
    return LLMClient(
        backend,
        budgets=cfg.budgets(),
        cache=cache,
        usage=store,
        max_retries=cfg.max_retries,
        breaker_failures=cfg.breaker_failures,
        breaker_cooldown_s=cfg.breaker_cooldown_s,
        namespace=namespace,
        concurrency=cfg.concurrency,
        max_tokens=cfg.max_tokens,
    )


def response_cache_path(config: Config, store: Store) -> Path | None:
    """Where the LLM's replies are cached: ``llm.cache_dir``, else beside an SQLite store
    file (``<store>.llm-cache``); None for an in-memory or a server store without one.
    A delete purges this file too, whatever LLM is configured now."""
    if config.llm.cache_dir:
        return Path(config.llm.cache_dir).expanduser() / "llm-cache.sqlite"
    if not store.url.startswith("sqlite:///"):
        return None  # a server's URL is no folder (and may hold a password)
    store_path = store.url.removeprefix("sqlite:///")
    return None if store_path in ("", ":memory:") else Path(store_path + ".llm-cache")


def _backend_options(cfg: LLMConfig, kind: str) -> dict[str, Any]:
    """Constructor options of the ``openai`` or ``gguf`` backend from ``[llm]``."""
    if kind == "openai":
        if not (cfg.base_url and cfg.model):
            raise ConfigError("llm kind 'openai' needs base_url and model")
        return {
            "base_url": cfg.base_url,
            "model": cfg.model,
            "api_key": cfg.api_key.get_secret_value() if cfg.api_key else None,
            "timeout": cfg.timeout_s,
            "structured_format": cfg.structured,
            # a server does not say its window: the configured one is the backend's
            "context_tokens": cfg.budgets().context_tokens,
            "reasoning_effort": cfg.reasoning_effort,
        }
    return {
        "model_path": cfg.model_path,
        "n_ctx": cfg.budgets().context_tokens,
        "n_threads": cfg.threads,
        "weights": None if cfg.weights == "as-is" else cfg.weights,
    }


_EMBEDDERS: dict[str, Embedder] = {}


def shared_default_embedder(config: Config) -> Embedder:
    """The configured embedder. The default model is loaded once per process, and only
    when something is first embedded: it is slow to load and large in memory, and many
    commands (stats, delete, history) never embed."""
    if config.embedder.kind != "minilm":
        return make_embedder(config)
    if "minilm" not in _EMBEDDERS:
        from memstrata.embed.lazy import LazyEmbedder
        from memstrata.embed.minilm import MiniLMEmbedder

        _EMBEDDERS["minilm"] = LazyEmbedder(
            MiniLMEmbedder.model_id, MiniLMEmbedder.dim, lambda: make_embedder(config)
        )
    return _EMBEDDERS["minilm"]
