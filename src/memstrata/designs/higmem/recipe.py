"""HiGMem's recipes: ``higmem`` and ``higmem-turns``, the ablation without the event layer
(the same turns and builder; retrieval uses no event as anchor, as in table 5)."""

from __future__ import annotations

from memstrata.engine.recipe import AnswererSpec, BuilderSpec, FusionSpec, Recipe, RouteSpec

# The llm filter's evidence set is kept whole (the route bounds it by what it shows the
# filter); the heuristic cut keeps at most k on its own.
EVIDENCE_SET = FusionSpec(budgets={"episode": "routes"})

RECIPES = [
    Recipe(
        name="higmem",
        description="HiGMem: turn and event layers, event-guided retrieval, compact evidence.",
        builders=[BuilderSpec(name="higmem")],
        routes=[RouteSpec(name="higmem")],
        fusion=EVIDENCE_SET,
        answerer=AnswererSpec(name="higmem"),
    ),
    Recipe(
        name="higmem-turns",
        description="HiGMem without the event layer: semantic turns and the filter only.",
        builders=[BuilderSpec(name="higmem")],
        routes=[RouteSpec(name="higmem", params={"use_events": False})],
        fusion=EVIDENCE_SET,
        answerer=AnswererSpec(name="higmem"),
    ),
]
