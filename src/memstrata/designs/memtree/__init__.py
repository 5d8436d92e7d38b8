"""MemTree (Rezazadeh et al., "From Isolated Conversations to Hierarchical Schemas:
Dynamic Tree Memory Representation for LLMs"): a tree of aggregated summaries grown one
episode at a time (Algorithm 1), searched by collapsed-tree retrieval.

Where things are:

* :mod:`.tree`: the tree held in memory, its invariants and cache;
* :mod:`.builder`: insertion (Algorithm 1), batch by batch, both tiers;
* :mod:`.aggregate`: the heuristic tier's extractive Aggregate;
  :mod:`.prompts`: the llm tier's Aggregate prompt (appendix A.1.2) and the answer
  prompt (A.2.2), ours and as printed, which :mod:`.answer` asks;
* :mod:`.route`: collapsed and traversal retrieval;
* :mod:`.recipe`: ``memtree``, ``memtree-traversal`` and ``memtree-paper`` (the paper's
  pipeline, with a builder, a route and an answerer of its own);
  :mod:`.show`: ``memstrata show``; :mod:`.view`: the explorer's views.
"""

from __future__ import annotations

from memstrata.designs.memtree.answer import MemTreeAnswerer, MemTreePaperAnswerer
from memstrata.designs.memtree.builder import MemTreeBuilder, MemTreePaperBuilder
from memstrata.designs.memtree.recipe import RECIPES
from memstrata.designs.memtree.records import TreeNode
from memstrata.designs.memtree.route import MemTreePaperRoute, MemTreeRoute
from memstrata.designs.memtree.show import show
from memstrata.designs.memtree.view import VIEWS
from memstrata.engine.contracts import Design

design = Design(
    name="memtree",
    builders=[MemTreeBuilder, MemTreePaperBuilder],
    routes=[MemTreeRoute, MemTreePaperRoute],
    answerers=[MemTreeAnswerer, MemTreePaperAnswerer],
    recipes=RECIPES,
    show=show,
    views=VIEWS,
    records=(TreeNode,),
    description="Dynamic tree memory: online hierarchical aggregation, collapsed retrieval.",
)
