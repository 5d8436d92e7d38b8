"""HiGMem (Cao, He and Tan, "HiGMem: A Hierarchical and LLM-Guided Memory System for
Long-Term Conversational Agents"): a turn layer and an event layer built online, and
retrieval that reads event summaries to pick the few turns worth reading.

Where things are:

* :mod:`.notes`: turn analysis, heuristic tier (keywords, tags, context, dates);
* :mod:`.layer`: both layers in memory, links both ways, invariants, cache;
* :mod:`.events`: affiliation and extractive update, heuristic tier;
* :mod:`.builder`: section 3.2, both tiers; :mod:`.prompts`: appendix C;
* :mod:`.route`: section 3.3, both tiers; :mod:`.answer`: the final QA stage;
* :mod:`.recipe`: ``higmem``, ``higmem-paper`` and ``higmem-turns``;
  :mod:`.show`: ``memstrata show``; :mod:`.view`: the explorer.

``higmem`` and ``higmem-paper`` each have a builder, a route and an answerer of that
name: the paper's pipeline keeps its notes and events apart from ours, so one namespace
can hold both.
"""

from __future__ import annotations

from memstrata.designs.higmem.answer import HiGMemAnswerer, PaperAnswerer
from memstrata.designs.higmem.builder import HiGMemBuilder, HiGMemPaperBuilder
from memstrata.designs.higmem.recipe import RECIPES
from memstrata.designs.higmem.records import Event, TurnNote
from memstrata.designs.higmem.route import GuidedRoute, PaperRoute
from memstrata.designs.higmem.show import show
from memstrata.designs.higmem.view import VIEWS
from memstrata.engine.contracts import Design

design = Design(
    name="higmem",
    builders=[HiGMemBuilder, HiGMemPaperBuilder],
    routes=[GuidedRoute, PaperRoute],
    answerers=[HiGMemAnswerer, PaperAnswerer],
    recipes=RECIPES,
    show=show,
    views=VIEWS,
    records=(Event, TurnNote),
    description="Turn and event layers, event-guided retrieval, compact evidence sets.",
)
