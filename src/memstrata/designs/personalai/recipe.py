"""The PersonalAI recipes: one per retriever, and ``personalai`` (Mixed: BeamSearch and
WaterCircles, the paper's best combination with a large model, Table 1).

Each recipe runs the PersonalAI route beside System-1 (the ``default`` recipe's episode
route) and fuses them: the graph route contributes the episodes its traversal reaches,
System-1 the ones similar to the question. The fusion is ours; ``personalai-paper`` and
``personalai-paper-beam`` are the paper's pipeline, the graph route alone. Hits come out
episodes first, then theses, then triplets.
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


def recipe(
    name: str, description: str, retrievers: list[str], fused: bool = True, **params: Any
) -> Recipe:
    routes = [RouteSpec(name="personalai", params={"retrievers": retrievers, **params})]
    if fused:
        # System-1's list of the words around a turn lost BEAM dev 0.014 in these recipes
        # (docs/benchmarks.md, "The evidence around a turn"), so it stays off here
        system1 = DEFAULT_SYSTEM1.model_copy(update={"session_weight": 0.0})
        routes.append(RouteSpec(name="system1", params=system1.model_dump()))
    return Recipe(
        name=name,
        description=description,
        builders=[BuilderSpec(name="personalai")],
        routes=routes,
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
    # The paper's pipeline as it is: the graph retriever alone, no System-1, feeding the
    # QA prompt. Its two best configurations (Table 1): BeamSearch + WaterCircles with
    # large models, BeamSearch with 7-8B ones.
    recipe(
        "personalai-paper",
        "PersonalAI as the paper runs it: the graph retriever alone (BeamSearch + "
        "WaterCircles), no System-1 fusion, the paper's QA prompt.",
        ["beam", "watercircles"],
        fused=False,
    ),
    recipe(
        "personalai-paper-beam",
        "PersonalAI as the paper runs it with BeamSearch alone (its best with 7-8B models).",
        ["beam"],
        fused=False,
    ),
]
