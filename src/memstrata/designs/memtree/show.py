"""``memstrata show NAME`` for MemTree: the subtree under a node id, or under ``root``."""

from __future__ import annotations

from memstrata.designs.memtree.builder import tree_cache
from memstrata.designs.memtree.tree import Tree
from memstrata.engine.contracts import Context, ShowNode
from memstrata.wording import plural

DEPTH = 3
WIDTH = 80


def show(ctx: Context, namespace: str, name: str) -> list[ShowNode] | None:
    tree = tree_cache(ctx).get(namespace)
    node_id = tree.root_id if name.strip().casefold() == "root" else name.strip()
    if node_id is None or node_id not in tree.nodes:
        return None
    return [subtree(tree, node_id, DEPTH)]


def line(tree: Tree, node_id: str) -> str:
    node = tree.nodes[node_id]
    kids = len(tree.children.get(node_id, []))
    what = "root" if node_id == tree.root_id else "leaf" if tree.is_leaf(node_id) else "node"
    head = " ".join(node.content.split())[:WIDTH]
    text = (
        f"{what} {node_id} depth {node.depth}, {plural(kids, 'child', 'children')}, "
        f"{plural(len(node.content), 'char')}"
    )
    return f"{text}: {head}" if head else text


def subtree(tree: Tree, node_id: str, depth: int) -> ShowNode:
    kids = tree.children.get(node_id, []) if depth > 0 else []
    return ShowNode(text=line(tree, node_id), children=[subtree(tree, c, depth - 1) for c in kids])
