"""The PersonalAI recipes: one per retriever, and ``personalai`` (Mixed: BeamSearch and
WaterCircles, the paper's best combination with a large model, Table 1).

The fused recipes are ours: each runs the PersonalAI route beside System-1 (the
``default`` recipe's episode route) and fuses them, the graph route contributing the
episodes its traversal reaches, System-1 the ones similar to the question; hits come out
episodes first, then theses, then triplets.

``personalai-paper`` and ``personalai-paper-beam`` are the paper's pipeline and nothing
else: the graph route alone, whose hits are the triplets filter's top items in its order
(an episodic item as its episode), which the QA generator reads as they come; Tables 5
and 7-10 in the paper's words and line formats; the parser's entities as the model gives
them. docs/personalai.md sets them beside the paper's sections.
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


#: the paper's settings of the three stages (the rest are the stages' defaults)
PAPER_BUILDER = {"output": "lines", "prompts": "paper"}
PAPER_ROUTE = {
    "output": "lines",
    "prompts": "paper",
    "check_entities": False,
    "entity_tokens": None,
    "hits": "items",
}
PAPER_QA = {
    "output": "lines",
    "prompts": "paper",
    "order": "hits",
    "max_items": None,
    "max_chars": None,
}


def recipe(name: str, description: str, retrievers: list[str], **params: Any) -> Recipe:
    """One of ours: the PersonalAI route fused with System-1."""
    routes = [RouteSpec(name="personalai", params={"retrievers": retrievers, **params})]
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


def paper(name: str, description: str, retrievers: list[str]) -> Recipe:
    """The paper's pipeline: the graph route alone, its filtered items one ranking of
    every kind (``order = "mixed"``: no share per kind), the search's ``k`` the most the
    QA generator reads."""
    return Recipe(
        name=name,
        description=description,
        builders=[BuilderSpec(name="personalai", params=PAPER_BUILDER)],
        routes=[RouteSpec(name="personalai", params={"retrievers": retrievers, **PAPER_ROUTE})],
        fusion=FusionSpec(order="mixed", kind_order=["fact", "thesis", "episode"]),
        answerer=AnswererSpec(name=ANSWERER, params=PAPER_QA),
    )


RECIPES = [
    recipe(
        "personalai",
        "Ours (fused): knowledge graph of objects, triplets, theses and episodes; Mixed "
        "retriever (BeamSearch + WaterCircles) fused with System-1, triplet filter, "
        "NotEnoughInfo answers.",
        ["beam", "watercircles"],
    ),
    recipe("personalai-astar", "Ours (fused): PersonalAI graph with the A* retriever.", ["astar"]),
    recipe(
        "personalai-wc",
        "Ours (fused): PersonalAI graph with the WaterCircles retriever.",
        ["watercircles"],
    ),
    recipe(
        "personalai-beam", "Ours (fused): PersonalAI graph with the BeamSearch retriever.", ["beam"]
    ),
    recipe(
        "personalai-mixed",
        "Ours (fused): PersonalAI graph with all three retrievers (A* + WaterCircles + "
        "BeamSearch).",
        ["astar", "watercircles", "beam"],
    ),
    # The paper's pipeline as it is. Its two best configurations (Table 1): BeamSearch +
    # WaterCircles with large models, BeamSearch with 7-8B ones.
    paper(
        "personalai-paper",
        "The paper's pipeline: the graph retriever alone (BeamSearch + WaterCircles), the "
        "QA generator reading the filtered top-N triplets, theses and episodes; the "
        "appendix prompts verbatim.",
        ["beam", "watercircles"],
    ),
    paper(
        "personalai-paper-beam",
        "The paper's pipeline with BeamSearch alone (its best with 7-8B models).",
        ["beam"],
    ),
]
