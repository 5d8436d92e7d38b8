"""MemTree recipes: ``memtree`` (collapsed-tree retrieval, section 3.2: the ``k`` best
nodes of the tree, by cosine fused with BM25) and ``memtree-traversal`` (level-by-level
top-k from the root, the A.3.5 ablation: every level's picks, in level order). Leaves
come back as episodes, inner nodes as ``tree_node`` summaries."""

from __future__ import annotations

from memstrata.engine.recipe import AnswererSpec, BuilderSpec, FusionSpec, Recipe, RouteSpec

# Leaves (as episodes) and summaries are ranked on one scale (the fused score), so the
# fused list keeps the route's order across kinds: the top k nodes of section 3.2.
FUSION = FusionSpec(order="mixed")

RECIPES = [
    Recipe(
        name="memtree",
        description="MemTree: a tree of aggregated summaries over the episodes; "
        "collapsed-tree retrieval over every node, by cosine and BM25.",
        builders=[BuilderSpec(name="memtree")],
        routes=[RouteSpec(name="memtree", params={"mode": "collapsed"})],
        fusion=FUSION,
        answerer=AnswererSpec(name="memtree"),
    ),
    Recipe(
        name="memtree-traversal",
        description="MemTree with traversal retrieval: top-k per level from the root "
        "(ablation A.3.5).",
        builders=[BuilderSpec(name="memtree")],
        routes=[RouteSpec(name="memtree", params={"mode": "traversal"})],
        # Up to k nodes per level: the route sizes the set, the fusion keeps its order.
        fusion=FUSION,
        answerer=AnswererSpec(name="memtree"),
    ),
]
