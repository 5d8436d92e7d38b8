"""The MemTree of one namespace, held in memory while it is built or searched.

Nodes are :class:`memstrata.models.TreeNode` records; children come from ``parent_id``
when the tree loads. The root is a record too (depth 0, no content, no sources), so it
is never removed along provenance. A leaf holds one chunk of one episode (one span). An
inner node stores no spans: its provenance is the leaves beneath it, read off the tree
(:meth:`Tree.leaves_under`), and its leaf count ``n`` is kept in memory (``Tree.count``).
Storing every leaf's span on every ancestor would make each insertion rewrite O(N)
provenance rows at the top of the tree. When a delete takes leaves away, inner nodes
left with nothing beneath are pruned at load and deleted at the next write.

Changes are tracked (``dirty``) and written in one transaction by :meth:`Tree.flush`. A
journal lets the builder undo an episode whose LLM calls failed part-way
(:meth:`Tree.begin`, :meth:`Tree.rollback`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from memstrata.designs.memtree.records import TreeNode
from memstrata.embed.base import Embedder
from memstrata.embed.cache import embed_cached
from memstrata.models import Derived, Span
from memstrata.retrieval.record_index import RecordIndex
from memstrata.store.base import Store
from memstrata.store.fulltext import terms_of

#: the builder that owns the records of the ``memtree`` recipes
BUILDER = "memtree"
#: the builder of ``memtree-paper``: its own tree (its aggregates differ), its own records
PAPER_BUILDER = "memtree-paper"

Vec = NDArray[np.float32]
_Saved = tuple[TreeNode | None, list[str] | None, Vec | None, int]


def unit(rows: Vec) -> Vec:
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return (rows / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def threshold(depth: int, max_depth: int, theta0: float, rate: float) -> float:
    """θ(d) = θ0 · exp(rate · d / max_depth) (appendix A.1.3); ``max_depth`` at least 1."""
    return theta0 * math.exp(rate * depth / max(1, max_depth))


class Tree:
    """Nodes, children, unit vectors of the nodes' content, and what changed."""

    def __init__(
        self, store: Store, embedder: Embedder, namespace: str, builder: str = BUILDER
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.namespace = namespace
        #: the builder that owns the tree's records
        self.builder = builder
        self.nodes: dict[str, TreeNode] = {}
        self.children: dict[str, list[str]] = {}
        self.vecs: dict[str, Vec] = {}
        self.leaf_of: dict[Span, str] = {}
        self.count: dict[str, int] = {}
        # Work counters of this object: insertions planned and applied, and the ancestors
        # they aggregated (on the llm tier, one call each).
        self.insertions = 0
        self.aggregates = 0
        self.root_id: str | None = None
        self.max_depth = 0
        self.version = 0
        self.stamp: tuple[int, str] = (0, "")
        self._dirty: set[str] = set()
        self._dead: set[str] = set()
        self.pruned: dict[str, str | None] = {}  # inner node dropped at load -> its parent
        self._journal: dict[str, _Saved] | None = None
        self._matrix: tuple[int, list[str], Vec] | None = None
        self._lexicon: tuple[int, RecordIndex] | None = None

    # loading ----------------------------------------------------------------------------
    @classmethod
    def load(cls, store: Store, embedder: Embedder, namespace: str, builder: str = BUILDER) -> Tree:
        t = cls(store, embedder, namespace, builder)
        t.stamp = store.records_stamp(namespace)
        recs = [
            r
            for r in store.get_records(namespace, "tree_node", builder=builder)
            if isinstance(r, TreeNode)
        ]
        roots = sorted((r for r in recs if r.parent_id is None), key=lambda r: r.id)
        for rec in recs:
            t.nodes[rec.id] = rec
            t.children.setdefault(rec.id, [])
        for rec in recs:
            if rec.parent_id is not None and rec.parent_id in t.nodes:
                t.children[rec.parent_id].append(rec.id)
        if roots:
            t.root_id = roots[0].id
        t._prune()
        t.max_depth = max((n.depth for n in t.nodes.values()), default=0)
        for nid in t.leaves():
            for span in t.nodes[nid].sources:
                t.leaf_of[span] = nid
        t._count_leaves()
        t.embed_nodes([i for i, n in t.nodes.items() if n.content])
        return t

    def _prune(self) -> None:
        """Drop inner nodes a delete left without leaves (no children, no spans)."""
        stack = [i for i, n in self.nodes.items() if self._is_empty_inner(i)]
        while stack:
            nid = stack.pop()
            if nid not in self.nodes or not self._is_empty_inner(nid):
                continue
            parent = self.nodes.pop(nid).parent_id
            self.children.pop(nid, None)
            self._dead.add(nid)
            self.pruned[nid] = parent
            if parent is not None and parent in self.children:
                self.children[parent] = [c for c in self.children[parent] if c != nid]
                stack.append(parent)

    def _is_empty_inner(self, nid: str) -> bool:
        node = self.nodes[nid]
        return node.parent_id is not None and not node.sources and not self.children.get(nid)

    def _count_leaves(self) -> None:
        order = sorted(self.nodes, key=lambda i: -self.nodes[i].depth)
        self.count = {i: 0 for i in self.nodes}
        for nid in order:
            if self.is_leaf(nid):
                self.count[nid] = 1
            parent = self.nodes[nid].parent_id
            if parent is not None and parent in self.count:
                self.count[parent] += self.count[nid]

    def is_current(self) -> bool:
        return self.store.records_stamp(self.namespace) == self.stamp

    # reading ----------------------------------------------------------------------------
    def is_leaf(self, node_id: str) -> bool:
        return node_id != self.root_id and not self.children.get(node_id)

    def leaves(self) -> list[str]:
        return [i for i in self.nodes if self.is_leaf(i)]

    def inner(self) -> list[str]:
        return [i for i in self.nodes if i != self.root_id and not self.is_leaf(i)]

    def descendants(self, node_id: str) -> int:
        """``n`` of the paper: the leaves beneath a node (a leaf counts itself)."""
        return self.count.get(node_id, 0)

    def leaves_under(self, node_id: str) -> list[str]:
        """Leaf ids beneath a node (the node itself when it is a leaf)."""
        out: list[str] = []
        stack = [node_id]
        while stack:
            nid = stack.pop()
            kids = self.children.get(nid, [])
            if kids:
                stack.extend(kids)
            elif nid != self.root_id:
                out.append(nid)
        return out

    def spans_under(self, node_id: str) -> list[Span]:
        """The provenance of a node: the spans of the leaves beneath it."""
        return [s for leaf in self.leaves_under(node_id) for s in self.nodes[leaf].sources]

    def threshold(self, depth: int, theta0: float, rate: float) -> float:
        return threshold(depth, self.max_depth, theta0, rate)

    def matrix(self) -> tuple[list[str], Vec]:
        """Ids and unit vectors of every node with content (the root has none)."""
        if self._matrix is None or self._matrix[0] != self.version:
            ids = [i for i in self.nodes if i in self.vecs]
            rows = (
                np.stack([self.vecs[i] for i in ids])
                if ids
                else np.zeros((0, self.embedder.dim), dtype=np.float32)
            )
            self._matrix = (self.version, ids, rows)
        return self._matrix[1], self._matrix[2]

    def lexicon(self) -> RecordIndex:
        """BM25 over the nodes of :meth:`matrix`, in its row order (the route's lexical
        ranking of leaves and summaries alike). Terms are the episode index's (stemmed,
        counted), so the tree's lexical match is the one dense + BM25 over the episodes
        makes."""
        ids, rows = self.matrix()
        if self._lexicon is None or self._lexicon[0] != self.version:
            texts = [self.nodes[i].content for i in ids]
            self._lexicon = (self.version, RecordIndex(ids, texts, rows, terms=terms_of))
        return self._lexicon[1]

    def embed(self, texts: Sequence[str]) -> Vec:
        return unit(embed_cached(self.store, self.embedder, list(texts)))

    def embed_nodes(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if not ids:
            return
        for nid, v in zip(ids, self.embed([self.nodes[i].content for i in ids]), strict=True):
            self.vecs[nid] = v
        self.version += 1

    # changing ---------------------------------------------------------------------------
    def ensure_root(self) -> str:
        if self.root_id is None:
            root = TreeNode(namespace=self.namespace, parent_id=None, depth=0)
            self.root_id = root.id
            self.nodes[root.id] = root
            self.children[root.id] = []
            self._dirty.add(root.id)
            self.version += 1
        return self.root_id

    def attach_leaf(self, parent_id: str, content: str, span: Span, vec: Vec) -> str:
        parent = self.nodes[parent_id]
        leaf = TreeNode(
            namespace=self.namespace,
            parent_id=parent_id,
            depth=parent.depth + 1,
            content=content,
            sources=[span],
        )
        self._save(parent_id)
        self._save(leaf.id, new=True)
        self.nodes[leaf.id] = leaf
        self.children[leaf.id] = []
        self.children[parent_id].append(leaf.id)
        self.vecs[leaf.id] = vec
        self.leaf_of[span] = leaf.id
        self.count[leaf.id] = 1
        up: str | None = parent_id
        while up is not None:
            self._save(up)
            self.count[up] = self.count.get(up, 0) + 1
            up = self.nodes[up].parent_id
        self.max_depth = max(self.max_depth, leaf.depth)
        self._touch(leaf.id)
        return leaf.id

    def expand(self, leaf_id: str) -> str:
        """A new inner node takes the leaf's place; the leaf moves one level down under it.
        The inner node starts with the leaf's content (the caller aggregates)."""
        leaf = self.nodes[leaf_id]
        assert leaf.parent_id is not None and self.is_leaf(leaf_id)
        parent_id = leaf.parent_id
        node = TreeNode(
            namespace=self.namespace,
            parent_id=parent_id,
            depth=leaf.depth,
            content=leaf.content,
        )
        for nid in (parent_id, leaf_id):
            self._save(nid)
        self._save(node.id, new=True)
        self.nodes[node.id] = node
        self.children[node.id] = [leaf_id]
        siblings = self.children[parent_id]
        siblings[siblings.index(leaf_id)] = node.id
        leaf.parent_id, leaf.depth = node.id, leaf.depth + 1
        self.vecs[node.id] = self.vecs[leaf_id]
        self.count[node.id] = self.count.get(leaf_id, 1)
        self.max_depth = max(self.max_depth, leaf.depth)
        self._touch(node.id)
        self._touch(leaf_id)
        return node.id

    def restore(self, node: TreeNode) -> None:
        """Put back an inner node that a removal took although nodes still hang below it
        (an older store kept spans on inner nodes); the caller re-derives its content."""
        node = node.model_copy(update={"sources": []})
        self.nodes[node.id] = node
        self.children[node.id] = [i for i, n in self.nodes.items() if n.parent_id == node.id]
        parent = node.parent_id
        if parent is not None and parent in self.children and node.id not in self.children[parent]:
            self.children[parent].append(node.id)
        self._count_leaves()
        self._touch(node.id)

    def ancestors(self, node_id: str | None) -> list[str]:
        """``node_id`` and the nodes above it, the root left out (nodes pruned at load are
        walked through)."""
        out: list[str] = []
        while node_id is not None:
            if node_id in self.nodes:
                if node_id != self.root_id:
                    out.append(node_id)
                node_id = self.nodes[node_id].parent_id
            else:
                node_id = self.pruned.get(node_id)
        return out

    def update_inner(self, node_id: str, content: str) -> None:
        """New aggregated content, re-embedded by the caller through :meth:`embed_nodes`.
        Spans an older store kept on inner nodes are dropped as the node is rewritten."""
        self._save(node_id)
        node = self.nodes[node_id]
        node.content = content
        node.sources = []
        self._touch(node_id)

    def _touch(self, node_id: str) -> None:
        self._dirty.add(node_id)
        self.version += 1

    # undo -------------------------------------------------------------------------------
    def begin(self) -> None:
        self._journal = {}

    def commit(self) -> None:
        self._journal = None

    def _save(self, node_id: str, new: bool = False) -> None:
        if self._journal is None or node_id in self._journal:
            return
        if new:
            self._journal[node_id] = (None, None, None, 0)
            return
        self._journal[node_id] = (
            self.nodes[node_id].model_copy(deep=True),
            list(self.children.get(node_id, [])),
            self.vecs.get(node_id),
            self.count.get(node_id, 0),
        )

    def rollback(self) -> None:
        """Undo every change since :meth:`begin`."""
        journal, self._journal = self._journal or {}, None
        for nid, (node, kids, vec, count) in journal.items():
            if node is None:
                self.nodes.pop(nid, None)
                self.children.pop(nid, None)
                self.vecs.pop(nid, None)
                self.count.pop(nid, None)
                self._dirty.discard(nid)
                for span in [s for s, leaf in self.leaf_of.items() if leaf == nid]:
                    del self.leaf_of[span]
            else:
                self.nodes[nid] = node
                self.children[nid] = kids or []
                self.count[nid] = count
                if vec is not None:
                    self.vecs[nid] = vec
        self.max_depth = max((n.depth for n in self.nodes.values()), default=0)
        self.version += 1

    # writing ----------------------------------------------------------------------------
    def pending(self) -> int:
        return len(self._dirty) + len(self._dead)

    def flush(self, built: tuple[str, list[int]] | None = None) -> None:
        """Write every changed node and the builder's done marks in one transaction."""
        put: list[Derived] = [self.nodes[i] for i in sorted(self._dirty) if i in self.nodes]
        put.sort(key=lambda n: n.depth if isinstance(n, TreeNode) else 0)
        self.store.write_records(self.namespace, put, sorted(self._dead), built, owner=self.builder)
        self._dirty.clear()
        self._dead.clear()
        self.stamp = self.store.records_stamp(self.namespace)


def tree_problems(tree: Tree) -> list[str]:
    """Broken invariants, as sentences; empty when the tree is valid."""
    out: list[str] = []
    roots = [n for n in tree.nodes.values() if n.parent_id is None]
    if tree.nodes and len(roots) != 1:
        out.append(f"{len(roots)} roots, expected one")
    for node in tree.nodes.values():
        if node.parent_id is None:
            if node.depth != 0 or node.content or node.sources:
                out.append(f"root {node.id} has depth, content or sources")
            continue
        parent = tree.nodes.get(node.parent_id)
        if parent is None:
            out.append(f"node {node.id} has a missing parent {node.parent_id}")
            continue
        if node.depth != parent.depth + 1:
            out.append(f"node {node.id} at depth {node.depth} under depth {parent.depth}")
        if node.id not in tree.children.get(parent.id, []):
            out.append(f"node {node.id} is not among its parent's children")
        if not node.content.strip():
            out.append(f"node {node.id} has no content")
    seen: dict[Span, str] = {}
    for nid in tree.leaves():
        spans = tree.nodes[nid].sources
        if len(spans) != 1:
            out.append(f"leaf {nid} has {len(spans)} spans, expected one")
        for s in spans:
            if s in seen:
                out.append(f"span {s} is in two leaves ({seen[s]}, {nid})")
            seen[s] = nid
    for nid in tree.inner():
        sources = tree.nodes[nid].sources
        if sources and set(sources) != set(tree.spans_under(nid)):
            out.append(f"inner node {nid} cites other spans than the leaves beneath it")
    for nid in tree.nodes:
        real = len(tree.leaves_under(nid))
        if tree.count.get(nid, 0) != real:
            out.append(f"node {nid} counts {tree.count.get(nid, 0)} leaves, has {real}")
    return out


class TreeCache:
    """One loaded :class:`Tree` per (builder, namespace), reloaded when some other writer
    changed the namespace's records (``Store.records_stamp``). Each builder owns a tree of
    its own: ``memtree`` and ``memtree-paper`` aggregate differently, so they never share
    nodes."""

    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self._trees: dict[tuple[str, str], Tree] = {}

    def get(self, namespace: str, builder: str = BUILDER) -> Tree:
        held = self._trees.get((builder, namespace))
        if held is not None and held.is_current():
            return held
        tree = Tree.load(self.store, self.embedder, namespace, builder)
        self._trees[(builder, namespace)] = tree
        return tree

    def forget(self, namespace: str, builder: str = BUILDER) -> None:
        self._trees.pop((builder, namespace), None)
