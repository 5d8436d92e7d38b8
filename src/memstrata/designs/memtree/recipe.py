"""MemTree recipes: ``memtree`` (collapsed-tree retrieval, section 3.2) and
``memtree-traversal`` (level-by-level top-k from the root, the A.3.5 ablation). Both
keep the ``k`` best nodes of the tree; leaves come back as episodes, inner nodes as
``tree_node`` summaries."""

from __future__ import annotations

from memstrata.engine.recipe import BuilderSpec, Recipe, RouteSpec

RECIPES = [
    Recipe(
        name="memtree",
        description="MemTree: a tree of aggregated summaries over the episodes; "
        "collapsed-tree retrieval over every node.",
        builders=[BuilderSpec(name="memtree")],
        routes=[RouteSpec(name="memtree", params={"mode": "collapsed"})],
    ),
    Recipe(
        name="memtree-traversal",
        description="MemTree with traversal retrieval: top-k per level from the root "
        "(ablation A.3.5).",
        builders=[BuilderSpec(name="memtree")],
        routes=[RouteSpec(name="memtree", params={"mode": "traversal"})],
    ),
]
