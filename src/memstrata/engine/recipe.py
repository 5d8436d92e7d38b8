"""Recipes: named presets that pick builders, routes, fusion and an answerer. Data, not code.

A recipe is a pydantic model, so the same thing can be written in Python or in the TOML
configuration::

    [recipes.facts-first]
    description = "System-1 over facts and episodes, facts weighted up"
    builders = [{ name = "mnemis" }]
    routes = [
      { name = "system1", weight = 1.0 },
      { name = "mnemis", weight = 2.0, params = { fact_weight = 0.5 } },
    ]
    fusion = { rrf_k = 30, budgets = { episode = 1, fact = 2 } }

Names refer to builders, routes and answerers that a registered design provides.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BuilderSpec(_Spec):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class RouteSpec(_Spec):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    weight: float = Field(default=1.0, ge=0, description="its weight in the fusion's RRF")


class AnswererSpec(_Spec):
    name: str = "grounded"
    params: dict[str, Any] = Field(default_factory=dict)
    context_tokens: int | None = Field(
        default=None,
        ge=1,
        description="the token budget of the hits an ask hands the answerer, in place of "
        "the configured budgets.max_tokens (a paper's context length); None: the configured",
    )


class FusionSpec(_Spec):
    """How the routes' hits become one list of at most ``k`` hits.

    Per kind, each route's ranking enters a weighted reciprocal rank fusion; duplicates
    (same kind and id) merge their sources. A search's ``k`` is the number of hits it
    returns, whatever the recipe: the kinds share it. ``budgets`` are the kinds' shares
    (a kind not named has 1; ``"routes"``, for a route whose evidence set has its own
    size, also 1; 0 leaves the kind out), and the ``k`` places are filled by rank: the
    next hit kept is the one whose rank within its kind, divided by its kind's share, is
    lowest (ties in ``kind_order``). So ``{episode = 1, fact = 2}`` keeps about a third
    episodes and two thirds facts, and a kind with fewer hits than its share leaves the
    rest to the others (as far as the routes found more). Each route is asked for
    :meth:`unit` hits of each kind. Kinds come out in the order of ``kind_order``, then
    in order of first appearance; ``order = "mixed"`` makes one ranking over all kinds instead (the
    fill then reads ranks in that ranking). ``reranker = "llm"`` lets the configured LLM
    reorder each kind's fused window (its first ``2k``) before the cut; on the heuristic
    tier it is skipped.
    """

    rrf_k: int = Field(default=60, ge=1)
    budgets: dict[str, float | Literal["routes"]] = Field(default_factory=dict)
    kind_order: list[str] = Field(default_factory=lambda: ["episode"])
    order: Literal["kinds", "mixed"] = "kinds"
    reranker: Literal["none", "llm"] = "none"

    def share(self, kind: str) -> float:
        """The kind's share of ``k`` (relative to the other kinds')."""
        budget = self.budgets.get(kind, 1.0)
        return 1.0 if budget == "routes" else max(0.0, float(budget))

    def shares(self) -> float:
        """The sum of the shares the budgets name (1 without budgets): ``k`` over it is
        what a share of 1 gets."""
        return sum(self.share(kind) for kind in self.budgets) or 1.0

    def unit(self, k: int) -> int:
        """How many hits of a kind each route is asked for: a share of 1 of ``k``,
        rounded up (``k`` for a recipe without budgets). A route sizes its kinds by it
        as the budgets say (``mnemis``: its unit of episodes and twice that of facts
        and of entities), so the routes hand over about ``k`` in the recipe's
        proportions, and each ranks as deep as its share."""
        return max(1, math.ceil(k / self.shares()))

    def total(self, per_share: int) -> int:
        """The ``k`` whose :meth:`unit` is ``per_share``: what a benchmark asks for to
        have ``per_share`` hits per unit of each kind's share, as deep as the recipe
        ranked them for ``per_share`` (50 for ``mnemis`` at 10: 10 episodes, 20 facts,
        20 entities)."""
        return max(per_share, math.floor(per_share * self.shares()))


class Recipe(_Spec):
    name: str = ""
    description: str = ""
    builders: list[BuilderSpec] = Field(default_factory=list)
    routes: list[RouteSpec] = Field(min_length=1)
    fusion: FusionSpec = Field(default_factory=FusionSpec)
    answerer: AnswererSpec = Field(default_factory=AnswererSpec)

    def summary(self) -> dict[str, Any]:
        """What ``memstrata recipes --json`` prints for it."""
        return {
            "name": self.name,
            "description": self.description,
            "builders": [b.name for b in self.builders],
            "routes": [r.name for r in self.routes],
            "answerer": self.answerer.name,
        }
