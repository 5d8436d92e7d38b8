"""The PersonalAI recipes: one per retriever, and ``personalai`` (Mixed: BeamSearch and
WaterCircles, the paper's best combination with a large model, Table 1).

Each recipe runs the PersonalAI route beside System-1 (the ``default`` recipe's episode
route) and fuses them: the graph route contributes the episodes its traversal reaches,
System-1 the ones similar to the question (the figures for the graph route alone are in
docs/personalai.md). Hits come out episodes first, then theses, then triplets.
"""

from __future__ import annotations

from typing import Any

from memstrata.engine.recipe import AnswererSpec, BuilderSpec, FusionSpec, Recipe, RouteSpec
from memstrata.retrieval.system1 import DEFAULT_SYSTEM1

ANSWERER = "personalai-qa"
FUSION = FusionSpec(
    rrf_k=60,
    kind_order=["episode", "thesis", "fact"],
    budgets={"episode": 1, "thesis": 1, "fact": 2},
)


def recipe(name: str, description: str, retrievers: list[str], **params: Any) -> Recipe:
    return Recipe(
        name=name,
        description=description,
        builders=[BuilderSpec(name="personalai")],
        routes=[
            RouteSpec(name="personalai", params={"retrievers": retrievers, **params}),
            RouteSpec(name="system1", params=DEFAULT_SYSTEM1.model_dump()),
        ],
        fusion=FUSION,
        answerer=AnswererSpec(name=ANSWERER),
    )


RECIPES = [
    recipe(
        "personalai",
        "Knowledge graph of objects, triplets, theses and episodes; Mixed retriever "
        "(BeamSearch + WaterCircles), triplet filter, NotEnoughInfo answers.",
        ["beam", "watercircles"],
    ),
    recipe("personalai-astar", "PersonalAI graph with the A* retriever.", ["astar"]),
    recipe("personalai-wc", "PersonalAI graph with the WaterCircles retriever.", ["watercircles"]),
    recipe("personalai-beam", "PersonalAI graph with the BeamSearch retriever.", ["beam"]),
    recipe(
        "personalai-mixed",
        "PersonalAI graph with all three retrievers (A* + WaterCircles + BeamSearch).",
        ["astar", "watercircles", "beam"],
    ),
]
