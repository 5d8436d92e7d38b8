"""One Mnemis search call, and what both pipelines draw on.

:class:`Search` embeds the queries, takes System-1's episodes (:class:`EpisodeRoute`) and
the graph, and hands each query to its pipeline: the fused one
(:mod:`memstrata.designs.mnemis.route`) or the paper's
(:mod:`memstrata.designs.mnemis.paper_route`). Both use System-1 over entities and facts,
System-2 on the tier's terms, the heuristic tier's stand-in reranker, the llm tier's
listwise rerank, and the hits built here. An LLM failure never fails a search: each
fallback is counted on the route (``MnemisRoute.fallbacks``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from memstrata.designs.mnemis.builder import graph_cache
from memstrata.designs.mnemis.global_selection import (
    NodeSelector,
    Selection,
    select_heuristic,
    select_llm,
)
from memstrata.designs.mnemis.graph import Graph
from memstrata.designs.mnemis.hierarchy import Hierarchy
from memstrata.designs.mnemis.rerank import Reranker, listwise
from memstrata.engine.contracts import Context
from memstrata.llm.types import LLMError
from memstrata.models import Hit
from memstrata.retrieval.rank_fusion import rrf
from memstrata.retrieval.record_index import RecordIndex
from memstrata.retrieval.system1 import EpisodeRoute
from memstrata.store.base import SearchFilters

if TYPE_CHECKING:
    from memstrata.designs.mnemis.route import MnemisRoute

logger = logging.getLogger("memstrata.mnemis")


def entity_text(graph: Graph, eid: str) -> str:
    """``name: summary``; a summary that already opens with the name (a category's
    member list) is not prefixed twice."""
    e = graph.entities.get(eid) or graph.categories[eid]
    if not e.summary:
        return e.name
    return e.summary if e.summary.startswith(f"{e.name}: ") else f"{e.name}: {e.summary}"


def fact_text(graph: Graph, fid: str) -> str:
    """A fact with its validity window, so an answer model can reason about time."""
    fact = graph.facts[fid]
    until = fact.invalid_at.date().isoformat() if fact.invalid_at else "now"
    if fact.valid_at is not None:
        return f"{fact.fact} (valid {fact.valid_at.date().isoformat()} to {until})"
    return f"{fact.fact} (valid until {until})" if fact.invalid_at else fact.fact


class Indexes:
    """A graph's entities, facts and categories, searchable, as of the graph's stamp."""

    def __init__(
        self,
        stamp: tuple[int, str],
        entities: RecordIndex,
        facts: RecordIndex,
        categories: RecordIndex,
    ):
        self.stamp = stamp
        self.entities = entities
        self.facts = facts
        self.categories = categories


class Search:
    """One search call: the route's parameters and caches, this call's LLM adapters. A
    pipeline subclass gives the size of System-1's episode pool and each query's hits."""

    def __init__(
        self,
        route: MnemisRoute,
        ctx: Context,
        selector: NodeSelector | None,
        reranker: Reranker | None,
    ) -> None:
        self.route = route
        self.params = route.params
        self.store = ctx.store
        self.embedder = ctx.embedder
        self.cache = graph_cache(ctx, route.params.builder)
        self.episodes = EpisodeRoute(ctx.store, ctx.embedder, route.params.system1)
        self.selector = selector
        self.reranker = reranker

    async def search(
        self,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None = None,
    ) -> list[list[Hit]]:
        qvecs = await asyncio.to_thread(self.embedder.embed, queries)
        ep_lists = await asyncio.to_thread(
            self.episodes.search, namespace, queries, self._pool(k), filters, qvecs
        )
        graph, hierarchy = await asyncio.to_thread(self.cache.get, namespace)
        if not graph.entities:
            return [hits[:k] for hits in ep_lists]
        idx = await asyncio.to_thread(self.route.index, self.store, self.embedder, graph)
        admitted = await asyncio.to_thread(self._admitted, namespace, filters)
        out = []
        for query, qvec, s1_eps in zip(queries, qvecs, ep_lists, strict=True):
            out.append(await self._one(graph, hierarchy, idx, query, qvec, s1_eps, k, admitted))
        return out

    def _pool(self, k: int) -> int:
        """How many episodes System-1 brings for ``k`` hits."""
        raise NotImplementedError

    async def _one(
        self,
        graph: Graph,
        hierarchy: Hierarchy,
        idx: Indexes,
        query: str,
        qvec: np.ndarray,
        s1_eps: list[Hit],
        k: int,
        admitted: set[str] | None,
    ) -> list[Hit]:
        """One query's hits: episodes, then facts, then entities."""
        raise NotImplementedError

    async def _global_selection(
        self, graph: Graph, hierarchy: Hierarchy, query: str, qvec: np.ndarray, terms: list[str]
    ) -> Selection:
        """System-2's Global Selection on the tier's terms: the LLM's, else the heuristic
        one; none when off."""
        if not self.params.system2:
            return Selection()
        if self.selector is not None:
            return await self._select_llm(graph, hierarchy, query, qvec, terms)
        return select_heuristic(graph, hierarchy, qvec, self.params.selection, set(terms))

    def _admitted(self, namespace: str, filters: SearchFilters | None) -> set[str] | None:
        """Ids of the episodes the filters admit, or None for no filters. Facts, entities
        and the episodes reached through them are held to the same filters as System-1."""
        if filters is None or filters.is_empty():
            return None
        out: set[str] = set()
        after = 0
        while batch := self.store.iter_episodes(namespace, after, 2000):
            out.update(ep.id for ep in batch if filters.admits(ep))
            after = batch[-1].key
        return out

    def _s1(
        self, index: RecordIndex, terms: list[str], qvec: np.ndarray, plain: bool = False
    ) -> list[str]:
        """Entities or facts by cosine and BM25. A record pointing away from the query
        (cosine at most 0) and sharing no word with it is no match: in a small graph it
        would still fill the candidates and lift its episodes over a better one that is
        not built yet. ``plain``: no such rule (the paper's System-1)."""
        p = self.params
        dense = [i for i, cos in index.dense(qvec, p.candidates) if plain or cos > 0]
        bm25 = [i for i, _ in index.bm25(terms, p.candidates)]
        scores = rrf([dense, bm25], k=p.rrf_k)
        return sorted(scores, key=lambda i: -scores[i])

    def _rerank_union(
        self, index: RecordIndex, terms: list[str], qvec: np.ndarray, s1: list[str], s2: list[str]
    ) -> list[str]:
        """The heuristic tier's stand-in reranker: one score for every member of the union,
        whichever route found it (cosine and BM25 ranks fused, agreement rewarded)."""
        union = list(dict.fromkeys(s1 + s2))
        if not union:
            return []
        cos = index.similarity(qvec, union)
        bm = index.bm25_of(terms, union)
        dense = sorted(union, key=lambda i: -cos.get(i, -1.0))
        lexical = sorted((i for i in union if bm.get(i, 0.0) > 0), key=lambda i: -bm[i])
        scores = rrf([dense, lexical], k=self.params.rrf_k)
        both = set(s1) & set(s2)
        for i in both:
            scores[i] *= 1 + self.params.agreement
        return sorted(union, key=lambda i: -scores.get(i, 0.0))

    async def _select_llm(
        self, graph: Graph, hierarchy: Hierarchy, query: str, qvec: np.ndarray, terms: list[str]
    ) -> Selection:
        """System-2 by the LLM. When a call fails, or the model named only nodes it was not
        shown and nothing was selected, this query takes the heuristic selection."""
        assert self.selector is not None
        try:
            sel = await select_llm(graph, query, self.selector)
            if sel.entities or not sel.unknown:
                return sel
            logger.warning("System-2 selection named no node shown; heuristic selection used")
        except LLMError as exc:
            logger.warning("System-2 selection failed; heuristic selection used: %s", exc)
        self.route.fallbacks["select_failed"] += 1
        return select_heuristic(graph, hierarchy, qvec, self.params.selection, set(terms))

    async def _rerank(
        self, query: str, kind: str, ids: list[str], text: Callable[[str], str], budget: int
    ) -> list[str]:
        """:func:`listwise` with each failed call (an LLM error, or a reply naming no
        candidate) counted, its window left in the order it came in."""
        reranker = self.reranker
        assert reranker is not None

        async def guarded(query: str, kind: str, texts: list[str]) -> list[int]:
            try:
                ranked = await reranker(query, kind, texts)
            except LLMError as exc:
                logger.warning("%s rerank call failed; its window keeps its order: %s", kind, exc)
                ranked = []
            if not any(0 <= i < len(texts) for i in ranked):
                self.route.fallbacks["rerank_failed"] += 1
            return ranked

        return await listwise(guarded, query, kind, ids, text, budget)


def fact_hits(
    graph: Graph, idx: Indexes, qvec: np.ndarray, ids: list[str], s1: list[str], s2: list[str]
) -> list[Hit]:
    """Fact hits with their validity windows, in the order given."""
    cos = idx.facts.similarity(qvec, ids)
    s1_set, s2_set = set(s1), set(s2)
    hits = []
    for f in ids:
        fact = graph.facts[f]
        hits.append(
            Hit(
                kind="fact",
                id=f,
                text=fact_text(graph, f),
                score=round(cos.get(f, 0.0), 6),
                sources=graph.episode_ids(f),
                spans=list(fact.sources),
                routes=_routes(f, s1_set, s2_set),
                metadata={
                    "valid_at": fact.valid_at.isoformat() if fact.valid_at else None,
                    "invalid_at": fact.invalid_at.isoformat() if fact.invalid_at else None,
                },
            )
        )
    return hits


def entity_hits(
    graph: Graph, idx: Indexes, qvec: np.ndarray, ids: list[str], s1: list[str], s2: list[str]
) -> list[Hit]:
    """Entity hits in the order given; a category is an entity hit marked
    ``metadata.category``, its sources its entities' episodes."""
    cos = idx.entities.similarity(qvec, [i for i in ids if i in graph.entities])
    s1_set, s2_set = set(s1), set(s2)
    hits = []
    for e in ids:
        cat = graph.categories.get(e)
        if cat is not None:
            hits.append(
                Hit(
                    kind="entity",
                    id=e,
                    text=f"[category, layer {cat.layer}] {entity_text(graph, e)}",
                    score=0.0,
                    sources=list(dict.fromkeys(sp.episode for sp in cat.sources))[:5],
                    routes=["system2"],
                    metadata={"category": True, "layer": cat.layer, "tags": cat.tags},
                )
            )
            continue
        ent = graph.entities[e]
        cited = graph.episode_ids(e)
        hits.append(
            Hit(
                kind="entity",
                id=e,
                text=entity_text(graph, e),
                score=round(cos.get(e, 0.0), 6),
                sources=cited[:5],
                routes=_routes(e, s1_set, s2_set),
                metadata={"tags": ent.tags, "episodes": len(cited)},
            )
        )
    return hits


def _routes(rid: str, s1: set[str], s2: set[str]) -> list[str]:
    return (["system1"] if rid in s1 else []) + (["system2"] if rid in s2 else [])


def admit(graph: Graph, ids: list[str], admitted: set[str] | None) -> list[str]:
    """Records resting on at least one episode the filters admit (all when no filters)."""
    if admitted is None:
        return ids
    return [i for i in ids if any(e in admitted for e in graph.episode_ids(i))]
