"""PersonalAI (Menschikov et al., "PersonalAI: A Systematic Comparison of Knowledge Graph
Storage and Retrieval Approaches for Personalized LLM agents"): a knowledge graph of
object nodes, simple relations, thesis hyperedges and episodic hyperedges, searched by
graph traversal (A*, WaterCircles, BeamSearch, Mixed).

Where things are:

* :mod:`.graph`: the records, the traversal graph (rustworkx) and the cache;
* :mod:`.extract`: the heuristic tier's construction; :mod:`.memorize`: both tiers'
  Memorize pipeline and the outdated-knowledge step; :mod:`.builder`: the builder;
* :mod:`.retrieve`: items, restrictions, comparator, triplets filter, Mixed;
  :mod:`.astar`, :mod:`.watercircles`, :mod:`.beam_search`: the retrievers;
* :mod:`.route`: the query pipeline; :mod:`.answer`: the QA generator;
* :mod:`.prompts`: every prompt and parser (appendices A-C);
* :mod:`.recipe`: the recipes; :mod:`.show`: ``memstrata show``; :mod:`.view`: the explorer.
"""

from __future__ import annotations

from memstrata.designs.personalai.answer import PersonalAIAnswerer
from memstrata.designs.personalai.builder import PersonalAIBuilder
from memstrata.designs.personalai.recipe import RECIPES
from memstrata.designs.personalai.records import Thesis
from memstrata.designs.personalai.route import PersonalAIRoute
from memstrata.designs.personalai.show import show
from memstrata.designs.personalai.view import VIEWS
from memstrata.engine.contracts import Design

design = Design(
    name="personalai",
    builders=[PersonalAIBuilder],
    routes=[PersonalAIRoute],
    answerers=[PersonalAIAnswerer],
    recipes=RECIPES,
    show=show,
    views=VIEWS,
    records=(Thesis,),
    description="Knowledge-graph memory with hyperedges; A*, WaterCircles, BeamSearch retrieval.",
)
