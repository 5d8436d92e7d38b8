"""The explorer's views of MemTree: each builder's tree by depth, each node with its
summary (``memtree``; ``memtree-paper``, listed where that tree was built)."""

from __future__ import annotations

from functools import partial

from memstrata.designs.memtree.records import TreeNode
from memstrata.designs.memtree.tree import BUILDER, PAPER_BUILDER
from memstrata.engine.contracts import Context
from memstrata.engine.views import DesignView, View, ViewNode, ViewQuery, short, tree


def render(ctx: Context, namespace: str, query: ViewQuery, builder: str = BUILDER) -> View:
    found = [
        n
        for n in ctx.store.get_records(namespace, "tree_node", builder=builder)
        if isinstance(n, TreeNode)
    ]
    parents = {n.parent_id for n in found}
    nodes = [
        ViewNode(
            id=n.id,
            label="root" if n.parent_id is None else short(n.content),
            kind="tree_node",
            text=n.content,
            group=f"depth {n.depth}",
            parent=n.parent_id,
            depth=n.depth,
            sources=n.sources,
            details={"depth": str(n.depth), "role": "inner" if n.id in parents else "leaf"},
        )
        for n in sorted(found, key=lambda n: n.depth)
    ]
    return tree(TREE if builder == BUILDER else PAPER_TREE, "memtree", nodes, query)


TREE = DesignView(
    name="memtree",
    title="MemTree by depth",
    layout="tree",
    builder=BUILDER,
    render=render,
    description="The tree from the root down; inner nodes hold aggregated summaries.",
)
PAPER_TREE = DesignView(
    name="memtree-paper",
    title="MemTree (the paper's pipeline) by depth",
    layout="tree",
    builder=PAPER_BUILDER,
    render=partial(render, builder=PAPER_BUILDER),
    description="The memtree-paper tree from the root down (aggregates conditioned on "
    "each node's children).",
)
VIEWS = [TREE, PAPER_TREE]
