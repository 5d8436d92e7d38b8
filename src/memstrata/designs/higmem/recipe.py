"""HiGMem's recipes: ``higmem``; ``higmem-turns``, the ablation without the event layer
(the same turns and builder; retrieval uses no event as anchor, as in table 5); and
``higmem-paper``, T_semantic as the paper writes it (Eq. 2: cosine over the turn nodes)
instead of System-1's boosted ranking."""

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
        name="higmem-paper",
        description="HiGMem with the paper's T_semantic: turns by cosine to the question over "
        "the turn nodes (turn, keywords, dates), not System-1's fused ranking.",
        builders=[BuilderSpec(name="higmem")],
        routes=[RouteSpec(name="higmem", params={"semantic": "cosine"})],
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
