"""The ``mnemis`` recipe: the Mnemis builder, its dual route, k episodes and 2k facts and
entities (section 2.3); ``mnemis-no-s2``, the same without System-2 (the ablation of
section 3.3.1, on the same built structures)."""

from __future__ import annotations

from memstrata.engine.recipe import BuilderSpec, FusionSpec, Recipe, RouteSpec

_FUSION = FusionSpec(
    kind_order=["episode", "fact", "entity"],
    budgets={"episode": 1, "fact": 2, "entity": 2},
)

RECIPES = [
    Recipe(
        name="mnemis",
        description=(
            "Entity and fact graph with a category hierarchy; System-1 and System-2 "
            "Global Selection, fused."
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
]
