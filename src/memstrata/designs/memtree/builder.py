"""The MemTree builder: Algorithm 1, one insertion per leaf, batch by batch.

Each episode becomes one leaf, or one leaf per chunk when it is longer than
``max_leaf_tokens`` (:func:`memstrata.retrieval.chunking.chunk_spans`). An insertion
descends from the root: at a node of depth ``d`` the new content is compared with the
node's children and goes into the most similar one if its cosine is at least
θ(d) = θ0 · exp(λ · d / max_depth), where ``max_depth`` is the tree's current depth (at
least 1). Reaching a leaf expands it: a new inner node takes its place, with the old
leaf and the new one as children. When no child passes, the new leaf is attached under
the current node. Every ancestor of the new leaf (the structural root excepted) then gets
Aggregate(c_v, c_new | n) and a new embedding; on the llm tier these calls are issued
together (``asyncio.gather``). ``n`` counts the leaves beneath the node (``memtree``) or
its children, n = |C(v)| as section 3.1 writes it (``memtree-paper``, whose builder keeps
a tree of its own).

A batch's new and changed nodes and its done marks are written in one transaction. An
episode whose aggregate calls fail is undone in memory and reported failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memstrata.designs.memtree.aggregate import extractive_aggregate
from memstrata.designs.memtree.records import TreeNode
from memstrata.designs.memtree.tree import (
    BUILDER,
    PAPER_BUILDER,
    Tree,
    TreeCache,
    Vec,
    tree_problems,
)
from memstrata.engine.contracts import Builder, Context, StepResult, forgotten_on_failure
from memstrata.errors import ConfigError
from memstrata.models import Episode, Span
from memstrata.retrieval.chunking import chunk_spans
from memstrata.store.base import Repairs


def tree_cache(ctx: Context) -> TreeCache:
    """The process-wide tree cache the builder, the route and ``show`` share."""
    return ctx.state("memtree.trees", lambda: TreeCache(ctx.store, ctx.embedder))


class MemTreeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    theta0: float = Field(default=0.4, ge=0, le=1, description="base threshold θ0 (A.1.3)")
    rate: float = Field(default=0.5, ge=0, description="λ, growth of θ(d) with depth (A.1.3)")
    max_leaf_tokens: int = Field(
        default=512, ge=16, description="longer episodes are chunked, one leaf per chunk"
    )
    summary_sentences: int = Field(
        default=6, ge=1, description="K of the heuristic aggregate's budget K / log2(n+1)"
    )
    speaker_prefix: bool = Field(
        default=True, description="a leaf's content starts with 'speaker: ' when known"
    )
    entries: Literal["leaves", "children"] = Field(
        default="leaves",
        description="what the aggregate's n counts: the leaves beneath the node (ours) or "
        "its children, n = |C(v)| (section 3.1)",
    )
    prompt: Literal["ours", "paper"] = Field(
        default="ours",
        description="llm tier: our aggregate prompt (JSON reply) or appendix A.1.2 as "
        "printed (plain-text reply)",
    )


class MemTreePaperParams(MemTreeParams):
    """The paper's settings: n = |C(v)| and the A.1.2 prompt as printed."""

    entries: Literal["leaves", "children"] = "children"
    prompt: Literal["ours", "paper"] = "paper"


@dataclass
class Insertion:
    """Where one new leaf goes, decided before any content changes."""

    content: str
    span: Span
    vec: Vec
    path: list[str]  # nodes descended into below the root
    expand: bool  # the last node of ``path`` is a leaf to expand
    targets: list[tuple[str, str, int]]  # (node, its content, its n before)


def leaf_texts(ep: Episode, max_tokens: int, speaker_prefix: bool) -> list[tuple[str, Span]]:
    """The leaf contents of an episode with their provenance spans."""
    head = f"{ep.speaker}: " if speaker_prefix and ep.speaker else ""
    return [
        (head + ep.text[s:e], Span(episode=ep.id, start=s, end=e))
        for s, e in chunk_spans(ep.text, max_tokens)
    ]


def plan(tree: Tree, content: str, span: Span, p: MemTreeParams) -> Insertion:
    """Descend from the root (Algorithm 1, lines 4-17) without changing anything."""
    vec = tree.embed([content])[0]
    node = tree.ensure_root()
    path: list[str] = []
    while True:
        kids = tree.children.get(node, [])
        if not kids:
            break
        sims = np.stack([tree.vecs[c] for c in kids]) @ vec
        best = int(np.argmax(sims))
        depth = tree.nodes[node].depth
        if float(sims[best]) < tree.threshold(depth, p.theta0, p.rate):
            break
        node = kids[best]
        path.append(node)
        if tree.is_leaf(node):
            break
    expand = bool(path) and tree.is_leaf(path[-1])
    targets = [(n, tree.nodes[n].content, entries(tree, n, p.entries)) for n in path]
    return Insertion(content, span, vec, path, expand, targets)


def entries(tree: Tree, node_id: str, count: str) -> int:
    """The n of a node about to aggregate, before the new leaf ("a summary from n
    previous entries"): the leaves beneath it, or (``children``) |C(v)|. A leaf about to
    be expanded becomes a parent of one child, itself moved down: n = 1 either way."""
    if count == "leaves" or tree.is_leaf(node_id):
        return tree.descendants(node_id)
    return len(tree.children.get(node_id, []))


def entries_after(ins: Insertion, count: str) -> list[int]:
    """Each target's n once the new leaf is in (the heuristic budget's n): every
    ancestor gains a leaf; only the new leaf's parent, the last target, gains a child."""
    last = len(ins.targets) - 1
    return [
        n + 1 if count == "leaves" or i == last else n for i, (_, _, n) in enumerate(ins.targets)
    ]


def apply(tree: Tree, ins: Insertion, contents: Sequence[str]) -> str:
    """Make the insertion with the aggregated contents of ``ins.targets``; the new leaf."""
    ids = [t[0] for t in ins.targets]
    if ins.expand:
        ids[-1] = tree.expand(ins.path[-1])
    parent = ids[-1] if ids else tree.ensure_root()
    leaf = tree.attach_leaf(parent, ins.content, ins.span, ins.vec)
    for nid, text in zip(ids, contents, strict=True):
        tree.update_inner(nid, text)
    tree.embed_nodes(ids)
    tree.insertions += 1
    tree.aggregates += len(ids)
    return leaf


class MemTreeBuilder(Builder[MemTreeParams]):
    """A tree of aggregated summaries over the episodes, grown one leaf at a time."""

    name = BUILDER
    kinds = ("tree_node",)
    Params = MemTreeParams
    stage_prefix = "memtree."

    async def update(self, ctx: Context, namespace: str, episodes: Sequence[Episode]) -> StepResult:
        cache = tree_cache(ctx)
        tree = await asyncio.to_thread(cache.get, namespace, self.name)
        batch = list(episodes)
        before = (tree.insertions, tree.aggregates)
        with forgotten_on_failure(cache.forget, namespace, self.name):
            if ctx.tier == "llm":
                if ctx.llm is None:
                    raise ConfigError(
                        "the llm tier needs an LLM; configure llm.kind or use --tier heuristic"
                    )
                failed = await self._update_llm(ctx, tree, batch)
            else:
                failed = await asyncio.to_thread(self._update_heuristic, tree, batch)
            keys = [ep.key for ep in batch if ep.id not in failed]
            await asyncio.to_thread(tree.flush, (self.name, keys))
        work = {
            "insertions": tree.insertions - before[0],
            "aggregates": tree.aggregates - before[1],
        }
        return StepResult(failed=failed, work=work)

    def _update_heuristic(self, tree: Tree, batch: list[Episode]) -> dict[str, str]:
        p = self.params
        for ep in batch:
            for content, span in leaf_texts(ep, p.max_leaf_tokens, p.speaker_prefix):
                ins = plan(tree, content, span, p)
                texts = [
                    extractive_aggregate(c, content, n, p.summary_sentences, tree.embed)
                    for (_, c, _), n in zip(ins.targets, entries_after(ins, p.entries), strict=True)
                ]
                apply(tree, ins, texts)
        return {}

    async def _update_llm(self, ctx: Context, tree: Tree, batch: list[Episode]) -> dict[str, str]:
        from memstrata.designs.memtree.prompts import llm_aggregate

        assert ctx.llm is not None
        llm = ctx.llm
        p = self.params
        paper = p.prompt == "paper"
        failed: dict[str, str] = {}
        for ep in batch:
            tree.begin()
            try:
                for content, span in leaf_texts(ep, p.max_leaf_tokens, p.speaker_prefix):
                    ins = await asyncio.to_thread(plan, tree, content, span, p)
                    texts = await asyncio.gather(
                        *(llm_aggregate(llm, c, content, n, paper=paper) for _, c, n in ins.targets)
                    )
                    await asyncio.to_thread(apply, tree, ins, texts)
            except Exception as exc:
                tree.rollback()
                failed[ep.id] = f"{type(exc).__name__}: {exc}"
            else:
                tree.commit()
        return failed

    async def rebuild(self, ctx: Context, namespace: str) -> None:
        await super().rebuild(ctx, namespace)
        tree_cache(ctx).forget(namespace, self.name)

    async def repair(self, ctx: Context, namespace: str, work: Repairs) -> None:
        """A removed episode's leaves went with it (their one source); its text is still
        in the aggregate of every ancestor. Each ancestor is re-derived from the children
        it has left, deepest first (Aggregate folded over them; inner nodes left with no
        leaf were pruned), then re-embedded. An updated episode comes back as a new leaf
        through the next drain."""
        cache = tree_cache(ctx)
        cache.forget(namespace)
        tree = await asyncio.to_thread(cache.get, namespace)
        with forgotten_on_failure(cache.forget, namespace, self.name):
            for rec in work.dropped:
                if isinstance(rec, TreeNode) and any(
                    n.parent_id == rec.id for n in tree.nodes.values()
                ):
                    tree.restore(rec)
            stale: set[str] = set()
            for rec in work.dropped:
                if isinstance(rec, TreeNode):
                    start = rec.id if rec.id in tree.nodes else rec.parent_id
                    stale.update(tree.ancestors(start))
            order = sorted(
                (i for i in stale if tree.children.get(i)), key=lambda i: -tree.nodes[i].depth
            )
            for nid in order:
                texts = [tree.nodes[k].content for k in tree.children[nid]]
                # each child is one entry of |C(v)|, or as many as the leaves beneath it
                counts = [
                    1 if self.params.entries == "children" else max(1, tree.descendants(k))
                    for k in tree.children[nid]
                ]
                if ctx.tier == "llm" and ctx.llm is not None and len(texts) > 1:
                    from memstrata.designs.memtree.prompts import llm_aggregate

                    text = await llm_aggregate(
                        ctx.llm,
                        "\n".join(texts[:-1]),
                        texts[-1],
                        sum(counts[:-1]),
                        paper=self.params.prompt == "paper",
                    )
                else:
                    text = await asyncio.to_thread(self._fold, tree, texts, counts)
                tree.update_inner(nid, text)
            await asyncio.to_thread(tree.embed_nodes, order)
            await asyncio.to_thread(tree.flush)

    def _fold(self, tree: Tree, texts: list[str], counts: list[int]) -> str:
        """The heuristic Aggregate folded over a node's children, in their order."""
        acc, n = texts[0], counts[0]
        for text, more in zip(texts[1:], counts[1:], strict=True):
            n += more
            acc = extractive_aggregate(acc, text, n, self.params.summary_sentences, tree.embed)
        return acc

    async def describe(self, ctx: Context, namespace: str) -> dict[str, Any]:
        tree = await asyncio.to_thread(tree_cache(ctx).get, namespace, self.name)
        return tree_stats(tree)

    async def check(self, ctx: Context, namespace: str) -> list[str]:
        tree = await asyncio.to_thread(tree_cache(ctx).get, namespace, self.name)
        return tree_problems(tree)


class MemTreePaperBuilder(MemTreeBuilder):
    """The paper's builder (``memtree-paper``): n = |C(v)| and the A.1.2 prompt as
    printed, in a tree of its own (its records are its own, so ``memtree`` and
    ``memtree-paper`` can be built side by side in one namespace)."""

    name = PAPER_BUILDER
    Params = MemTreePaperParams


def tree_stats(tree: Tree) -> dict[str, Any]:
    """Node counts, depth, branching and content length per depth (A.3.6's figures)."""
    inner = tree.inner()
    leaves = tree.leaves()
    per_depth: dict[int, list[int]] = {}
    for nid, node in tree.nodes.items():
        if nid != tree.root_id:
            per_depth.setdefault(node.depth, []).append(len(node.content))
    fanout = [len(tree.children[n]) for n in inner]
    if tree.root_id is not None and tree.children.get(tree.root_id):
        fanout.append(len(tree.children[tree.root_id]))
    by_leaves: dict[str, list[int]] = {}
    for nid in inner:
        n = tree.descendants(nid)
        bucket = next(b for b in LEAF_BUCKETS if n <= b[1])
        by_leaves.setdefault(bucket[0], []).append(len(tree.nodes[nid].content))
    return {
        "nodes": len(tree.nodes),
        "inner": len(inner),
        "leaves": len(leaves),
        "depth": tree.max_depth,
        "mean_leaf_depth": round(sum(tree.nodes[i].depth for i in leaves) / len(leaves), 2)
        if leaves
        else 0.0,
        "mean_branching": round(sum(fanout) / len(fanout), 2) if fanout else 0.0,
        "nodes_per_depth": {d: len(v) for d, v in sorted(per_depth.items())},
        "mean_chars_per_depth": {d: round(sum(v) / len(v)) for d, v in sorted(per_depth.items())},
        # Inner nodes only, by leaves beneath: the aggregate should shrink as n grows.
        "inner_mean_chars_by_leaves": {
            label: round(sum(v) / len(v))
            for label, _ in LEAF_BUCKETS
            if (v := by_leaves.get(label))
        },
    }


LEAF_BUCKETS = (("2", 2), ("3-4", 4), ("5-8", 8), ("9-16", 16), ("17-64", 64), ("65+", 1 << 62))
