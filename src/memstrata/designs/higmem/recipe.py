"""HiGMem's recipes: ``higmem`` and ``higmem-turns``, the ablation without the event layer
(the same turns and builder; retrieval uses no event as anchor, as in table 5)."""

from __future__ import annotations

from memstrata.engine.recipe import AnswererSpec, BuilderSpec, Recipe, RouteSpec

RECIPES = [
    Recipe(
        name="higmem",
        description="HiGMem: turn and event layers, event-guided retrieval, compact evidence.",
        builders=[BuilderSpec(name="higmem")],
        routes=[RouteSpec(name="higmem")],
        answerer=AnswererSpec(name="higmem"),
    ),
    Recipe(
        name="higmem-turns",
        description="HiGMem without the event layer: semantic turns and the filter only.",
        builders=[BuilderSpec(name="higmem")],
        routes=[RouteSpec(name="higmem", params={"use_events": False})],
        answerer=AnswererSpec(name="higmem"),
    ),
]
