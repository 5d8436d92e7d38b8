"""One configuration object, from code, a TOML file or ``MEMSTRATA_*`` environment variables.

Precedence, lowest first: defaults, the TOML file (``MEMSTRATA_CONFIG`` or an explicit
path), environment variables, then arguments given in code. Nested fields use a double
underscore in the environment: ``MEMSTRATA_LLM__BASE_URL=http://127.0.0.1:8080/v1``.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError, model_validator

from memstrata.engine.recipe import Recipe
from memstrata.errors import ConfigError

ENV_PREFIX = "MEMSTRATA_"


class EmbedderConfig(BaseModel):
    kind: Literal["minilm", "openai"] = "minilm"
    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    dim: int | None = None


class LLMConfig(BaseModel):
    """``kind = "none"`` keeps everything on the LLM-free heuristic tier."""

    kind: Literal["none", "openai", "gguf"] = "none"
    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    model_path: str | None = None
    threads: int | None = Field(
        default=None,
        description="gguf: CPU threads for the model; default: llama.cpp's (half the cores)",
    )
    cache_dir: str | None = Field(
        default=None, description="response cache folder; default: beside the store file"
    )
    max_retries: int = 2
    concurrency: int = 4
    timeout_s: float = 120.0


class Budgets(BaseModel):
    """How much a search returns: items per kind and a token ceiling for the context.

    Episodes are the only kind System-1 returns; each structure adds its own kind's budget.
    """

    episodes: int = 10
    max_tokens: int | None = 2000


class RetrievalConfig(BaseModel):
    """Overrides of the recipe's System-1 knobs (see ``memstrata.retrieval.system1``);
    ``None`` keeps the recipe's value."""

    candidates: int | None = None
    rrf_k: int | None = None
    dense_weight: float | None = None
    bm25_weight: float | None = None
    speaker_boost: float | None = None
    drop_speaker_terms: bool | None = None
    neighbour_weight: float | None = None
    neighbour_window: int | None = None
    date_boost: float | None = None


class BuildConfig(BaseModel):
    """When and how a recipe's builders run as episodes arrive.

    ``mode``: ``inline`` runs them inside ``add``/``add_many`` (the default without an
    LLM: the heuristic tier is cheap); ``queue`` only commits the episode, and a worker
    (``memstrata worker`` or ``AsyncMemory.start_worker``) folds it in later (the default
    with an LLM); ``manual`` leaves it to ``memstrata build``.
    """

    mode: Literal["inline", "queue", "manual"] | None = None
    batch_size: int = Field(default=64, ge=1, description="episodes per builder step")
    max_attempts: int = Field(default=3, ge=1, description="tries before a failure is dead")
    backoff_s: float = Field(default=30.0, ge=0, description="wait before the first retry")
    lease_s: float = Field(default=300.0, gt=0, description="a build lease lasts this long")
    wait_s: float = Field(default=600.0, ge=0, description="how long build waits for a lease")
    poll_s: float = Field(default=1.0, gt=0, description="worker's pause when idle")


class Config(BaseModel):
    store: str = "memstrata.db"
    namespace: str = "default"
    recipe: str = Field(default="default", description="the recipe add, search and ask use")
    recipes: dict[str, Recipe] = Field(
        default_factory=dict, description="recipes defined here, [recipes.NAME] in TOML"
    )
    build: BuildConfig = Field(default_factory=BuildConfig)
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    budgets: Budgets = Field(default_factory=Budgets)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    max_episode_chars: int = Field(
        default=2_000_000, description="longer episodes are refused with a clear error"
    )

    @model_validator(mode="after")
    def _known_recipe(self) -> Config:
        from memstrata.engine.registry import Registry

        Registry.load(self.recipes).recipe(self.recipe)
        return self

    @property
    def build_mode(self) -> str:
        if self.build.mode is not None:
            return self.build.mode
        return "inline" if self.llm.kind == "none" else "queue"

    @classmethod
    def load(
        cls, path: str | Path | None = None, *, env: dict[str, str] | None = None, **overrides: Any
    ) -> Config:
        """Defaults < TOML file < environment < ``overrides`` (dotted keys allowed)."""
        environ = dict(os.environ if env is None else env)
        data: dict[str, Any] = {}
        toml_path = path or environ.get(ENV_PREFIX + "CONFIG")
        if toml_path:
            p = Path(toml_path).expanduser()
            try:
                data = tomllib.loads(p.read_text())
            except FileNotFoundError as exc:
                raise ConfigError(f"configuration file {p} does not exist") from exc
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"configuration file {p} is not valid TOML: {exc}") from exc
        for key, value in environ.items():
            if key.startswith(ENV_PREFIX) and key != ENV_PREFIX + "CONFIG":
                _set(data, key[len(ENV_PREFIX) :].lower().split("__"), value)
        return _validated(data, overrides)

    def with_overrides(self, **overrides: Any) -> Config:
        """A copy with ``overrides`` (dotted keys allowed) applied and validated."""
        return _validated(self.model_dump(), overrides)

    def masked(self) -> dict[str, Any]:
        """The effective configuration with secrets shown as ``********``."""
        return _mask(self.model_dump(mode="json"))


def _validated(data: dict[str, Any], overrides: dict[str, Any]) -> Config:
    for key, value in overrides.items():
        if value is not None:
            _set(data, key.replace("__", ".").split("."), value)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from exc
    except ConfigError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from exc


def _set(data: dict[str, Any], path: list[str], value: Any) -> None:
    node = data
    for part in path[:-1]:
        nxt = node.setdefault(part, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"configuration key {'.'.join(path)} conflicts with {part}")
        node = nxt
    node[path[-1]] = value


def _mask(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _mask(v, k) for k, v in value.items()}
    if key in {"api_key", "password"} and value:
        return "********"
    return value
