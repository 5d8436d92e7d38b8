"""The MemTree route: collapsed-tree retrieval (section 3.2), or traversal (A.3.5).

* ``collapsed``: every node but the structural root is one set; nodes under
  ``theta_retrieve`` (cosine) dropped, the top ``k`` kept. The set is ranked by the
  query's cosine fused with a BM25 ranking of the nodes' text (:func:`fused`; ours, the
  paper ranks by cosine alone, which ``bm25_weight = 0`` restores: the
  ``memtree-paper`` route, :class:`MemTreePaperRoute`, over its builder's tree).
* ``traversal`` (A.3.5, after RAPTOR's tree retriever): from the root, the ``beam``
  most similar children at each level, expanded level by level. Every level's picks
  are candidates, not re-ranked across levels. A search returns ``k`` hits in all, so
  the ``k`` are taken from the levels in turn (the top level's best, the next level's
  best, ..., then each level's second): every level has its picks, each level in cosine
  order. Picks under ``theta_retrieve`` are dropped.

A leaf hit comes back as its episode (``kind="episode"``, rendered as System-1 renders
it, the leaf's span in ``spans``); a leaf that holds one chunk of a long episode reads
as that chunk only, so the answer stage gets the part that matched. Chunks of one
episode count once, at the rank (and with the text) of the best. An inner-node hit is
``kind="tree_node"`` with its aggregated content, and its ``sources`` are the episodes
beneath it ordered by their own (best leaf) cosine to the query, so Recall@K over
sources credits the episodes the summary rests on most.
"""

from __future__ import annotations

import itertools
from typing import ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memstrata.designs.memtree.builder import tree_cache
from memstrata.designs.memtree.tree import BUILDER, PAPER_BUILDER, Tree, unit
from memstrata.engine.contracts import BlockingRoute, Context
from memstrata.models import Hit
from memstrata.retrieval import documents
from memstrata.retrieval.rank_fusion import rrf
from memstrata.retrieval.text import content_terms
from memstrata.store.base import SearchFilters
from memstrata.store.fulltext import phrases_of


class MemTreeRouteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["collapsed", "traversal"] = "collapsed"
    theta_retrieve: float = Field(
        default=0.1,
        ge=-1,
        le=1,
        description="nodes with a lower cosine to the query are dropped (section 3.2)",
    )
    beam: int | None = Field(default=None, ge=1, description="traversal: nodes per level (k)")
    bm25_weight: float = Field(
        default=1.0,
        ge=0,
        description="collapsed: weight of the BM25 ranking of the nodes' text, fused with "
        "the cosine ranking by reciprocal rank; 0 ranks by cosine alone (the paper)",
    )
    rrf_k: int = Field(default=60, ge=1, description="collapsed: the fusion's rank constant")


class MemTreePaperRouteParams(MemTreeRouteParams):
    """Section 3.2's collapsed search: cosine alone."""

    bm25_weight: float = Field(
        default=0.0, ge=0, description="0: the paper's cosine alone (see MemTreeRouteParams)"
    )


class MemTreeRoute(BlockingRoute[MemTreeRouteParams]):
    """Cosine search over the tree's nodes; leaves as episodes, inner nodes as summaries."""

    name = "memtree"
    Params = MemTreeRouteParams
    needs = (BUILDER,)
    #: the builder whose tree it searches
    builder: ClassVar[str] = BUILDER

    def search_now(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None,
    ) -> list[list[Hit]]:
        tree = tree_cache(ctx).get(namespace, self.builder)
        ids, rows = tree.matrix()
        if not ids or k < 1:
            return [[] for _ in queries]
        p = self.params
        qvecs = unit(np.asarray(ctx.embedder.embed(queries), dtype=np.float32))
        lexicon = tree.lexicon() if p.mode == "collapsed" and p.bm25_weight > 0 else None
        out = []
        for query, qvec in zip(queries, qvecs, strict=True):
            cosine = rows @ qvec
            sims = dict(zip(ids, cosine.tolist(), strict=True))
            scores = sims
            if p.mode == "traversal":
                ranked = in_turn(traverse(tree, sims, p.beam or k), sims, p.theta_retrieve)
                size = k
            else:
                if lexicon is not None:
                    bm25 = lexicon.bm25_scores(query_terms(query))
                    scores = fused(ids, cosine, bm25, p.bm25_weight, p.rrf_k)
                ranked = sorted(scores, key=lambda i: -scores[i])
                size = k
            ranked = [i for i in ranked if sims[i] >= p.theta_retrieve]
            out.append(self._hits(ctx, namespace, tree, ranked, scores, size, filters))
        return out

    def _hits(
        self,
        ctx: Context,
        namespace: str,
        tree: Tree,
        ranked: list[str],
        scores: dict[str, float],
        k: int,
        filters: SearchFilters | None,
    ) -> list[Hit]:
        """The first ``k`` hits of ``ranked``; ``scores`` rank a summary's episodes
        against it (the cosine, or the fused score in a lexical collapsed search)."""
        # Enough candidates to fill k after merging chunks and filtering.
        window = ranked[: max(4 * k, k + 16)]
        best = {i: best_leaves(tree, i, scores) for i in window if not tree.is_leaf(i)}
        below = {i: sorted(b, key=b.__getitem__, reverse=True) for i, b in best.items()}
        wanted = {tree.nodes[i].sources[0].episode for i in window if i not in below}
        if filters is not None and not filters.is_empty():
            wanted |= {e for eps in below.values() for e in eps}
        eps = {e.id: e for e in ctx.store.get_episodes(namespace, sorted(wanted))}
        if filters is not None and not filters.is_empty():
            eps = {i: e for i, e in eps.items() if filters.admits(e)}
            below = {i: [e for e in srcs if e in eps] for i, srcs in below.items()}
        below = {i: cited(srcs, best[i], scores[i]) for i, srcs in below.items()}
        hits: list[Hit] = []
        seen: set[tuple[str, str]] = set()
        for nid in window:
            node = tree.nodes[nid]
            if nid not in below:
                ep = eps.get(node.sources[0].episode)
                if ep is None or ("episode", ep.id) in seen:
                    continue
                seen.add(("episode", ep.id))
                hits.append(
                    documents.episode_hit(
                        ep, scores[nid], ["leaf"], node.sources, excerpt=node.sources[0]
                    )
                )
            elif below[nid]:
                keep = set(below[nid])
                hits.append(
                    Hit(
                        kind="tree_node",
                        id=nid,
                        text=node.content,
                        score=round(scores[nid], 6),
                        sources=below[nid],
                        spans=[s for s in tree.spans_under(nid) if s.episode in keep],
                        routes=[self.params.mode],
                        metadata={"depth": node.depth, "leaves": tree.descendants(nid)},
                    )
                )
            if len(hits) >= k:
                break
        return hits


class MemTreePaperRoute(MemTreeRoute):
    """The ``memtree-paper`` builder's tree, searched by cosine alone by default."""

    name = PAPER_BUILDER
    Params = MemTreePaperRouteParams
    needs = (PAPER_BUILDER,)
    builder = PAPER_BUILDER


def fused(
    ids: list[str], cosine: np.ndarray, bm25: np.ndarray, weight: float, rrf_k: int
) -> dict[str, float]:
    """Reciprocal rank fusion of two rankings of the tree's nodes, leaves and summaries
    alike: every node by cosine, and the nodes sharing a term with the query by BM25
    (weighted ``weight``). The paper ranks by cosine alone; MiniLM's cosine misses the
    exact names, numbers and word forms a chat turn is found by, which is what kept the
    tree below dense + BM25 over the same turns. Returned in ``ids`` order."""
    by_cosine = [ids[i] for i in np.argsort(-cosine, kind="stable")]
    matched = np.nonzero(bm25 > 0)[0]
    by_bm25 = [ids[i] for i in matched[np.argsort(-bm25[matched], kind="stable")]]
    scores = rrf([by_cosine, by_bm25], k=rrf_k, weights=[1.0, weight])
    return {i: scores[i] for i in ids}


def query_terms(query: str) -> list[str]:
    """The query's content words as the episode index reads them (stemmed)."""
    return [t for phrase in phrases_of(content_terms(query)) for t in phrase]


def traverse(tree: Tree, sims: dict[str, float], beam: int) -> list[list[str]]:
    """Top-``beam`` children per level from the root: each level's picks, level by
    level, each level in cosine order."""
    if tree.root_id is None:
        return []
    levels: list[list[str]] = []
    level = [tree.root_id]
    while level:
        kids = [c for n in level for c in tree.children.get(n, []) if c in sims]
        level = sorted(kids, key=lambda i: -sims[i])[:beam]
        if level:
            levels.append(level)
    return levels


def in_turn(levels: list[list[str]], sims: dict[str, float], floor: float) -> list[str]:
    """The levels' picks at or above ``floor``, taken from the levels in turn: each
    level's best, then each level's second, ...; so the first ``k`` hold every level."""
    kept = [[i for i in level if sims[i] >= floor] for level in levels]
    return [i for row in itertools.zip_longest(*kept) for i in row if i is not None]


def best_leaves(tree: Tree, node_id: str, scores: dict[str, float]) -> dict[str, float]:
    """Per episode beneath a node, its best leaf's score for the query."""
    best: dict[str, float] = {}
    for leaf in tree.leaves_under(node_id):
        ep = tree.nodes[leaf].sources[0].episode
        best[ep] = max(best.get(ep, -2.0), scores.get(leaf, -2.0))
    return best


def cited(ranked: list[str], best: dict[str, float], own: float) -> list[str]:
    """The episodes a summary hit cites: those of ``ranked`` (beneath the node, best
    first) whose best leaf matches the query at least as well as the node itself (its
    cosine ``own``); at least the best one. Citing every episode beneath would fill K
    with turns the summary merely sits above (a top node holds hundreds) and rank the
    tree below its own leaves."""
    return [e for e in ranked if best[e] >= own] or ranked[:1]
