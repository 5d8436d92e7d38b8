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

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: The limit of a kind whose budget is "routes": no cut.
UNSIZED = 1 << 31


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


class FusionSpec(_Spec):
    """How the routes' hits become one list.

    Per kind, each route's ranking enters a weighted reciprocal rank fusion; duplicates
    (same kind and id) merge their sources. ``budgets`` caps each kind at a multiple of
    the search's ``k`` (a kind not named gets ``k``; the budget ``"routes"`` leaves the
    kind as the routes sized it, for a route whose evidence set has its own size); kinds
    come out in the order of
    ``kind_order``, then in order of first appearance. ``reranker = "llm"`` lets the
    configured LLM reorder each kind's fused window (twice its budget) before the cut;
    on the heuristic tier it is skipped.
    """

    rrf_k: int = Field(default=60, ge=1)
    budgets: dict[str, float | Literal["routes"]] = Field(default_factory=dict)
    kind_order: list[str] = Field(default_factory=lambda: ["episode"])
    order: Literal["kinds", "mixed"] = "kinds"
    reranker: Literal["none", "llm"] = "none"

    def limit(self, kind: str, k: int) -> int:
        budget = self.budgets.get(kind, 1.0)
        if budget == "routes":
            return UNSIZED
        return max(0, round(float(budget) * k))


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
