"""Mnemis: a base graph of entities and facts, a category hierarchy over the entities,
and dual-route retrieval (System-1 similarity, System-2 Global Selection).

Where things are:

* :mod:`.builder`: the builder (base graph, then hierarchy), resumable per episode;
* :mod:`.extract`, :mod:`.base_graph`: the heuristic tier's extraction;
  :mod:`.base_graph_llm`: the llm tier's;
* :mod:`.graph`: the graph held in memory; :mod:`.hierarchy`: the category layers;
* :mod:`.global_selection`: System-2 Global Selection;
* :mod:`.route`: the dual route and its fusion; :mod:`.rerank`: the llm tier's
  listwise reranking; :mod:`.prompts`: every prompt;
* :mod:`.recipe`: the ``mnemis`` recipes (``mnemis-paper``, the paper's pipeline);
  :mod:`.show`: ``memstrata show``;
  :mod:`.view`: the explorer's views.
"""

from __future__ import annotations

from memstrata.designs.mnemis.builder import MnemisBuilder, MnemisPaperBuilder
from memstrata.designs.mnemis.recipe import RECIPES
from memstrata.designs.mnemis.records import Category
from memstrata.designs.mnemis.route import MnemisRoute
from memstrata.designs.mnemis.show import show
from memstrata.designs.mnemis.view import VIEWS
from memstrata.engine.contracts import Design

design = Design(
    name="mnemis",
    builders=[MnemisBuilder, MnemisPaperBuilder],
    routes=[MnemisRoute],
    recipes=RECIPES,
    show=show,
    views=VIEWS,
    records=(Category,),
    description="Hierarchical graph memory with dual-route retrieval.",
)
