"""HiGMem's recipes: ``higmem``, ours (the paper's pipeline fused with our own retrieval
refinements); ``higmem-turns``, the ablation without the event layer (the same turns and
builder; retrieval uses no event as anchor, as in table 5); and ``higmem-paper``, the
paper's pipeline and nothing else (docs/higmem.md, "higmem-paper against the paper"),
with a builder, a route and an answerer of its own name: its notes and events are its own,
so it and ``higmem`` can both be built in one namespace."""

from __future__ import annotations

from typing import Any

from memstrata.engine.recipe import AnswererSpec, BuilderSpec, FusionSpec, Recipe, RouteSpec

# The llm filter's evidence set is kept whole (the route bounds it by what it shows the
# filter); the heuristic cut keeps at most k on its own.
EVIDENCE_SET = FusionSpec(budgets={"episode": "routes"})

#: the paper's build: appendix C's prompts (and section 3.1's refresh), m = 5, τ = 10,
#: k_event = 10 candidates of which a turn joins any subset (E* ⊆ E_cand, Eq. 4)
PAPER_BUILD: dict[str, Any] = {
    "prompts": "paper",
    "window": 5,
    "tau": 10,
    "k_event": 10,
    "max_join": 10,
}

#: the paper's retrieval (section 3.3): q_kw retrieves T_semantic (cosine over the turn
#: nodes, k_turn = 10) and E_semantic (k_event = 10); every turn of each event is shown
#: with the whole event; T_cand = T_semantic ∪ T_pred goes whole to the filter; turns are
#: shown whole, the prompts sized to the model's context. Our additions are off: profile
#: lookups, link expansion, the cut fact sheet and turns; on the heuristic tier the
#: speaker bonus and the session context of the stand-in scorer.
PAPER_ROUTE: dict[str, Any] = {
    "semantic": "cosine",
    "query": "keywords",
    "prompts": "paper",
    "k_turn": 10,
    "k_event": 10,
    "shown_per_event": None,
    "prompt_budget": "model",
    "max_candidates": None,
    "k_profile": 0,
    "link_expansion": False,
    "sheet_lines": None,
    "shown_chars": None,
    "speaker_bonus": 0.0,
    "neighbour_weight": 0.0,
}

#: appendix C's category-specific answer prompts over the whole final evidence set
PAPER_ANSWER: dict[str, Any] = {"prompts": "paper", "max_items": None, "max_chars": None}

RECIPES = [
    Recipe(
        name="higmem",
        description="HiGMem, ours (fused): turn and event layers, event-guided retrieval, "
        "compact evidence, with our own refinements (System-1 turns, profile lookups, link "
        "expansion, an abstain option).",
        builders=[BuilderSpec(name="higmem")],
        routes=[RouteSpec(name="higmem")],
        fusion=EVIDENCE_SET,
        answerer=AnswererSpec(name="higmem"),
    ),
    Recipe(
        name="higmem-paper",
        description="HiGMem, the paper's pipeline: appendix C's prompts, q_kw retrieving "
        "turns by cosine and events, event-local prediction, the filter over whole turns, "
        "appendix C's answer prompt.",
        builders=[BuilderSpec(name="higmem-paper", params=PAPER_BUILD)],
        routes=[RouteSpec(name="higmem-paper", params=PAPER_ROUTE)],
        fusion=EVIDENCE_SET,
        answerer=AnswererSpec(name="higmem-paper", params=PAPER_ANSWER),
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
