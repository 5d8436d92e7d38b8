"""The ``mindgraph`` recipe: the memory mode's concept graph and its route, one hit per
source episode, and ``ask`` answered by the paper's tool loop over the graph of the turns
found (the reader mode is ``memstrata read``, outside any recipe)."""

from __future__ import annotations

from memstrata.engine.recipe import AnswererSpec, BuilderSpec, FusionSpec, Recipe, RouteSpec

RECIPES = [
    Recipe(
        name="mindgraph",
        description="MindGraph: a concept graph (claims, entities, numbers) with exact "
        "provenance, kept current as episodes arrive; turns found by System-1 and by the "
        "content of their nodes (the entity ranking is off: graph_weight 0).",
        builders=[BuilderSpec(name="mindgraph")],
        routes=[RouteSpec(name="mindgraph")],
        fusion=FusionSpec(kind_order=["concept_node", "episode"]),
        answerer=AnswererSpec(name="mindgraph"),
    ),
]
