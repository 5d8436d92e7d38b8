"""MemTree recipes.

* ``memtree`` (ours, fused): collapsed-tree retrieval (section 3.2: the ``k`` best nodes
  of the tree) by cosine fused with BM25; the aggregate's n counts the leaves beneath a
  node; the answer reads ten results of up to 4,000 characters.
* ``memtree-traversal``: the same tree, level-by-level top-k from the root (the A.3.5
  ablation: every level's picks, in level order).
* ``memtree-paper``: the paper's pipeline and nothing else, on a tree of its own
  (builder ``memtree-paper``): n = |C(v)| and the A.1.2 prompt as printed, collapsed
  retrieval by cosine alone, the A.2.2 prompt as printed over the results in order
  within A.1.4's 8,192 tokens.

Leaves come back as episodes, inner nodes as ``tree_node`` summaries.
"""

from __future__ import annotations

from memstrata.designs.memtree.answer import PAPER_CONTEXT_TOKENS
from memstrata.designs.memtree.tree import PAPER_BUILDER
from memstrata.engine.recipe import AnswererSpec, BuilderSpec, FusionSpec, Recipe, RouteSpec

# Leaves (as episodes) and summaries are ranked on one scale (the fused score), so the
# fused list keeps the route's order across kinds: the top k nodes of section 3.2.
FUSION = FusionSpec(order="mixed")

RECIPES = [
    Recipe(
        name="memtree",
        description="MemTree, ours (fused): a tree of aggregated summaries over the "
        "episodes; collapsed-tree retrieval over every node, by cosine and BM25.",
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
    Recipe(
        name="memtree-paper",
        description="MemTree, the paper's pipeline: aggregates conditioned on n = |C(v)| "
        "with the A.1.2 prompt, collapsed retrieval by cosine alone, the A.2.2 answer over "
        "8,192 tokens of results.",
        builders=[
            BuilderSpec(name=PAPER_BUILDER, params={"entries": "children", "prompt": "paper"})
        ],
        routes=[
            RouteSpec(
                name=PAPER_BUILDER,
                params={"mode": "collapsed", "bm25_weight": 0.0, "theta_retrieve": 0.1},
            )
        ],
        fusion=FUSION,
        answerer=AnswererSpec(
            name="memtree-paper",
            params={
                "max_items": 10,
                "max_chars": None,
                "context_tokens": PAPER_CONTEXT_TOKENS,
                "prompt": "paper",
            },
            # the hits an ask hands over, whole: room for the answerer's own fill of
            # 8,192 tokens, so the result that crosses the limit reaches it and is cut
            context_tokens=2 * PAPER_CONTEXT_TOKENS,
        ),
    ),
]
