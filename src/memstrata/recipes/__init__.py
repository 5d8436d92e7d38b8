"""Named presets: which routes run and with which parameters.

* ``rag`` — the flat baseline: dense + BM25 over episodes, plain RRF.
* ``default`` — System-1 with speaker matching, session context and date handling.
* ``mnemis`` — System-1 (``default`` for episodes, plus entities and facts) and System-2
  Global Selection over the category hierarchy, fused; needs ``memstrata build``.
"""

from __future__ import annotations

from dataclasses import replace

from memstrata.config import Config
from memstrata.errors import ConfigError
from memstrata.retrieval.system1 import System1Params

RECIPES: dict[str, System1Params] = {
    "rag": System1Params(),
    # A steeper rank discount (k=20 instead of 60) lets the refinements re-order within the
    # head of the list without being swamped by the long, flat RRF tail. Round values; the
    # dev-split sweep in docs/benchmarks.md shows the neighbourhood is flat (k 10-30).
    "default": System1Params(
        rrf_k=20,
        speaker_boost=0.5,
        drop_speaker_terms=True,
        neighbour_weight=0.2,
        neighbour_window=1,
        date_boost=0.3,
    ),
}
RECIPES["mnemis"] = RECIPES["default"]

# Recipes that read structures a builder made, and the builder they need.
BUILT_RECIPES = {"mnemis": "mnemis"}


def system1_params(config: Config, recipe: str | None = None) -> System1Params:
    name = recipe or config.recipe
    try:
        params = RECIPES[name]
    except KeyError:
        raise ConfigError(f"unknown recipe {name!r}; choose one of {sorted(RECIPES)}") from None
    overrides = {k: v for k, v in config.retrieval.model_dump().items() if v is not None}
    return replace(params, **overrides)
