"""The ``mnemis`` recipe: the Mnemis builder, its dual route, k episodes and 2k facts and
entities (section 2.3)."""

from __future__ import annotations

from memstrata.engine.recipe import BuilderSpec, FusionSpec, Recipe, RouteSpec

RECIPES = [
    Recipe(
        name="mnemis",
        description=(
            "Entity and fact graph with a category hierarchy; System-1 and System-2 "
            "Global Selection, fused."
        ),
        builders=[BuilderSpec(name="mnemis")],
        routes=[RouteSpec(name="mnemis")],
        fusion=FusionSpec(
            kind_order=["episode", "fact", "entity"],
            budgets={"episode": 1, "fact": 2, "entity": 2},
        ),
    ),
]
