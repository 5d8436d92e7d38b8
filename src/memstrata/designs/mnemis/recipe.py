"""The Mnemis recipes.

* ``mnemis``: ours, fused. The Mnemis builder, its dual route with our System-1 and our
  fusion of the episode union, k episodes and 2k facts and entities (section 2.3);
* ``mnemis-no-s2``: the same without System-2 (the ablation of section 3.3.1, on the
  same built structures);
* ``mnemis-paper``: the paper's pipeline and nothing else, on records of its own
  (its builder keeps the paper's hierarchy rules and rebuilds; docs/mnemis.md has the
  side-by-side table).
"""

from __future__ import annotations

from memstrata.designs.mnemis.graph import PAPER_BUILDER
from memstrata.engine.recipe import BuilderSpec, FusionSpec, Recipe, RouteSpec

_FUSION = FusionSpec(
    kind_order=["episode", "fact", "entity"],
    budgets={"episode": 1, "fact": 2, "entity": 2},
)

#: section 2.3 on the route's terms: plain System-1 (dense and BM25, no boosts),
#: "summing the reciprocals of each candidate's ranks" (RRF with k = 0, ranks from 1)
_PAPER_ROUTE = {
    "pipeline": "paper",
    "builder": PAPER_BUILDER,
    "system1": {"rrf_k": 0},
    "rrf_k": 0,
}

RECIPES = [
    Recipe(
        name="mnemis",
        description=(
            "Ours, fused: entity and fact graph with a category hierarchy; System-1 and "
            "System-2 Global Selection, the episode union fused by our rankings."
        ),
        builders=[BuilderSpec(name="mnemis")],
        routes=[RouteSpec(name="mnemis")],
        fusion=_FUSION,
    ),
    Recipe(
        name="mnemis-no-s2",
        description="The mnemis recipe without System-2 Global Selection (an ablation).",
        builders=[BuilderSpec(name="mnemis")],
        routes=[RouteSpec(name="mnemis", params={"system2": False})],
        fusion=_FUSION,
    ),
    Recipe(
        name="mnemis-paper",
        description=(
            "The paper's pipeline: System-1 top-k by dense and BM25 RRF, union with "
            "System-2 Global Selection, the whole union reranked, categories of every "
            "walked layer in the context."
        ),
        builders=[BuilderSpec(name=PAPER_BUILDER)],
        routes=[RouteSpec(name="mnemis", params=_PAPER_ROUTE)],
        fusion=_FUSION,
    ),
]
