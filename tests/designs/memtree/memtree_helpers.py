"""Helpers of the MemTree tests: episodes in an in-memory store, hand-made trees."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import numpy as np

from memstrata.designs.memtree.records import TreeNode
from memstrata.designs.memtree.tree import Tree
from memstrata.models import Episode, Span
from memstrata.store import PreparedEpisode, SQLiteStore

NS = "t"


def add_episodes(
    store: SQLiteStore, texts: Sequence[str], prefix: str = "e", speaker: str | None = None
) -> list[Episode]:
    """Commit ``texts`` as episodes ``e0``, ``e1``, ... and return them in order."""
    ids = [f"{prefix}{i}" for i in range(len(texts))]
    store.add_episodes(
        NS,
        [
            PreparedEpisode(
                external_id=eid,
                text=text,
                speaker=speaker,
                content_hash=hashlib.sha256(f"{eid}:{text}".encode()).digest()[:16],
                index_text=text,
            )
            for eid, text in zip(ids, texts, strict=True)
        ],
    )
    by_id = {e.id: e for e in store.get_episodes(NS, ids)}
    return [by_id[i] for i in ids]


def axis(i: int, dim: int, mix: dict[int, float] | None = None) -> np.ndarray:
    """A unit vector along axis ``i``, optionally mixed with other axes."""
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    for j, w in (mix or {}).items():
        v[j] = w
    return (v / np.linalg.norm(v)).astype(np.float32)


def hand_tree(store: SQLiteStore, embedder, shape: dict[str, str | None]) -> Tree:
    """A tree of nodes named by ``shape`` (name -> parent name, None for the root);
    leaves cite a span of a stored episode named after them, inner nodes the union."""
    tree = Tree(store, embedder, NS)
    leaves = [n for n in shape if n not in shape.values() and shape[n] is not None]
    add_episodes(store, [f"episode of {n}" for n in leaves], prefix="leaf-")
    span = {n: Span(episode=f"leaf-{i}", start=0, end=10) for i, n in enumerate(leaves)}

    def depth(n: str) -> int:
        p = shape[n]
        return 0 if p is None else depth(p) + 1

    for name, parent in shape.items():
        node = TreeNode(
            id=name,
            namespace=NS,
            parent_id=parent,
            depth=depth(name),
            content="" if parent is None else f"content of {name}",
        )
        tree.nodes[name] = node
        tree.children[name] = []
        if parent is None:
            tree.root_id = name
    for name, parent in shape.items():
        if parent is not None:
            tree.children[parent].append(name)
    for leaf in leaves:
        tree.leaf_of[span[leaf]] = leaf
        tree.nodes[leaf].sources.append(span[leaf])
    tree._count_leaves()
    tree.max_depth = max(node.depth for node in tree.nodes.values())
    return tree


def set_vectors(tree: Tree, vecs: dict[str, np.ndarray], new: np.ndarray) -> None:
    """Give the nodes fixed vectors, and make every new content embed as ``new``."""
    tree.vecs.update(vecs)
    fixed: Callable[[Sequence[str]], np.ndarray] = lambda texts: np.stack([new] * len(texts))  # noqa: E731
    tree.embed = fixed  # type: ignore[method-assign]
