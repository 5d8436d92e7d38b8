"""``memstrata show NAME`` for MemTree: the subtree under a node id, or under ``root``; or
the leaves whose content holds a name or word (any script, however typed: its folded
words, Chinese and Japanese by character bigrams). Each builder's tree is looked in
(``memtree``, ``memtree-paper``); when both answer, each answer is headed by its tree."""

from __future__ import annotations

from memstrata import nlp
from memstrata.designs.memtree.builder import tree_cache
from memstrata.designs.memtree.tree import BUILDER, PAPER_BUILDER, Tree
from memstrata.engine.contracts import Context, ShowNode
from memstrata.wording import plural

DEPTH = 3
WIDTH = 80
#: leaves listed under a name
MOST = 20


def show(ctx: Context, namespace: str, name: str) -> list[ShowNode] | None:
    found = {
        builder: got
        for builder in (BUILDER, PAPER_BUILDER)
        if (got := show_in(tree_cache(ctx).get(namespace, builder), name))
    }
    if len(found) > 1:
        return [ShowNode(text=f"tree {b}", children=got) for b, got in found.items()]
    return next(iter(found.values()), None)


def show_in(tree: Tree, name: str) -> list[ShowNode] | None:
    """What one tree holds under ``name``."""
    node_id = tree.root_id if name.strip().casefold() == "root" else name.strip()
    if node_id is None:
        return None
    if node_id not in tree.nodes:
        return _holding(tree, name.strip())
    return [subtree(tree, node_id, DEPTH)]


def _holding(tree: Tree, want: str) -> list[ShowNode] | None:
    """The leaves holding every term of ``want``, at most ``MOST``, by node id."""
    terms = nlp.match_terms(want)
    if not terms:
        return None
    found = sorted(
        i
        for i, n in tree.nodes.items()
        if n.content and tree.is_leaf(i) and terms <= nlp.match_terms(n.content)
    )
    if not found:
        return None
    kids = [ShowNode(text=line(tree, i)) for i in found[:MOST]]
    return [ShowNode(text=f"{want}: in {plural(len(found), 'leaf', 'leaves')}", children=kids)]


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
