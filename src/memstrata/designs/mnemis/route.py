"""The Mnemis recipe's retrieval: System-1 and System-2 routes, then fusion.

* **System-1** (section 2.3): episodes through :class:`EpisodeRoute`; entities by
  summary embedding and name + summary BM25; facts by fact embedding and fact BM25;
  each kind fused by RRF on its own and cut to ``k`` episodes, ``2k`` entities and facts.
* **System-2**: :mod:`memstrata.designs.mnemis.global_selection`, unranked sets.
* **Fusion**: the union per kind, duplicates removed, re-ranked and budgeted. The
  ``heuristic`` tier ranks System-2's items by their similarity to the query, fuses that
  ranking with System-1's by RRF, and adds ``agreement`` for an item both routes found;
  episodes also get a ranking from the facts that cite them, and one from the top
  entities (each entity's best System-1 episode, for multi-hop questions). The ``llm``
  tier has the LLM order each kind's candidates instead (no offline cross-encoder
  exists here).

Hits come out episodes first, then facts, then entities: the answer model reads the raw
turns first, and ``Recall@K`` over distinct sources measures the episode ranking.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memstrata.designs.mnemis.builder import BUILDER, graph_cache
from memstrata.designs.mnemis.global_selection import (
    NodeSelector,
    Selection,
    SelectionParams,
    select_heuristic,
    select_llm,
)
from memstrata.designs.mnemis.graph import Graph
from memstrata.designs.mnemis.hierarchy import Hierarchy
from memstrata.designs.mnemis.prompts import llm_reranker, node_selector
from memstrata.embed.base import Embedder
from memstrata.embed.cache import embed_cached
from memstrata.engine.contracts import Context, Route
from memstrata.models import Hit
from memstrata.retrieval import documents
from memstrata.retrieval.fusion import rrf
from memstrata.retrieval.record_index import RecordIndex
from memstrata.retrieval.system1 import DEFAULT_SYSTEM1, EpisodeRoute, System1Params
from memstrata.retrieval.text import content_terms
from memstrata.store.base import SearchFilters, Store

# LLM reranking: (query, kind, [candidate texts]) -> candidate indexes, best first.
Reranker = Callable[[str, str, list[str]], Awaitable[list[int]]]


class MnemisParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: the System-1 episode route this one builds on (the ``default`` recipe's knobs)
    system1: System1Params = Field(default_factory=lambda: DEFAULT_SYSTEM1)
    candidates: int = 50
    rrf_k: int = 20
    agreement: float = 0.5
    # Measured on the LoCoMo dev split (docs/benchmarks.md): the facts' episodes at 0.3
    # raised Recall@10; System-2's episodes at any weight tried (0.2-0.4) lowered it, so
    # System-2 reaches the episode list through the facts and entities it selects.
    fact_weight: float = 0.3
    s2_weight: float = 0.0
    # One episode per top fused entity (the one System-1 ranks best): a multi-hop
    # question's evidence is spread over several entities. 0.3 and 10 raised multi-hop
    # Recall@10 by 0.07; weights of 0.5 and more, or 20 entities, cost overall recall.
    entity_weight: float = 0.3
    entity_depth: int = 10
    selection: SelectionParams = Field(default_factory=SelectionParams)


def entity_text(graph: Graph, eid: str) -> str:
    e = graph.entities[eid]
    return f"{e.name}: {e.summary}" if e.summary else e.name


class _Indexes:
    def __init__(self, stamp: tuple[int, str], entities: RecordIndex, facts: RecordIndex):
        self.stamp = stamp
        self.entities = entities
        self.facts = facts


class MnemisRoute(Route[MnemisParams]):
    """Dual-route retrieval over one namespace's Mnemis graph: episodes, facts, entities."""

    name = "mnemis"
    Params = MnemisParams
    needs = (BUILDER,)

    def __init__(self, params: MnemisParams | None = None) -> None:
        super().__init__(params)
        self._indexes: dict[str, _Indexes] = {}

    async def search(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None = None,
    ) -> list[list[Hit]]:
        selector = reranker = None
        if ctx.tier == "llm" and ctx.llm is not None:
            llm = ctx.llm.scoped(namespace=namespace)
            selector, reranker = node_selector(llm), llm_reranker(llm)
        run = _Search(self, ctx, selector, reranker)
        return await run.search(namespace, queries, k, filters)

    def index(self, store: Store, embedder: Embedder, graph: Graph) -> _Indexes:
        cached = self._indexes.get(graph.namespace)
        if cached is not None and cached.stamp == graph.stamp:
            return cached
        eids = list(graph.entities)
        etexts = [entity_text(graph, i) for i in eids]
        fids = [f for f, fact in graph.facts.items() if fact.invalid_at is None]
        ftexts = [graph.facts[f].fact for f in fids]
        vecs = embed_cached(store, embedder, etexts + ftexts)
        idx = _Indexes(
            graph.stamp,
            RecordIndex(eids, etexts, vecs[: len(eids)]),
            RecordIndex(fids, ftexts, vecs[len(eids) :]),
        )
        self._indexes[graph.namespace] = idx
        return idx


class _Search:
    """One search call: the route's parameters and caches, this call's LLM adapters."""

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
        self.cache = graph_cache(ctx)
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
        p = self.params
        qvecs = await asyncio.to_thread(self.embedder.embed, queries)
        ep_lists = await asyncio.to_thread(
            self.episodes.search, namespace, queries, max(k, p.candidates), filters, qvecs
        )
        graph, hierarchy = await asyncio.to_thread(self.cache.get, namespace)
        if not graph.entities:
            return [hits[:k] for hits in ep_lists]
        idx = await asyncio.to_thread(self.route.index, self.store, self.embedder, graph)
        out = []
        for query, qvec, s1_eps in zip(queries, qvecs, ep_lists, strict=True):
            out.append(await self._one(graph, hierarchy, idx, query, qvec, s1_eps, k, filters))
        return out

    async def _one(
        self,
        graph: Graph,
        hierarchy: Hierarchy,
        idx: _Indexes,
        query: str,
        qvec: np.ndarray,
        s1_eps: list[Hit],
        k: int,
        filters: SearchFilters | None,
    ) -> list[Hit]:
        p = self.params
        terms = content_terms(query)
        two_k = 2 * k
        s1_ent = self._s1(idx.entities, terms, qvec)
        s1_fact = self._s1(idx.facts, terms, qvec)
        if self.selector is not None:
            sel = await select_llm(graph, query, self.selector)
        else:
            sel = select_heuristic(graph, hierarchy, qvec, p.selection)
        ent_cos = idx.entities.cosine(qvec)
        fact_cos = idx.facts.cosine(qvec)
        s2_ent = sorted(
            dict.fromkeys(sel.entities + sel.linked_entities), key=lambda i: -ent_cos.get(i, -1)
        )
        s2_fact = sorted(
            (f for f in sel.facts if f in fact_cos), key=lambda i: -fact_cos.get(i, -1)
        )
        ents = self._fuse([s1_ent, s2_ent])
        facts = self._fuse([s1_fact, s2_fact])
        # Episodes: System-1's own ranking, the episodes behind the best facts, and the
        # System-2 episodes in System-1's order (unranked otherwise).
        s1_ids = [h.id for h in s1_eps]
        fact_eps = list(
            dict.fromkeys(e for f in facts[: p.candidates] for e in graph.episode_ids(f))
        )
        s2_set = set(sel.episodes)
        s2_eps = [e for e in s1_ids if e in s2_set]
        # Entity-diversified episodes: see MnemisParams.entity_weight.
        s1_rank = {e: i for i, e in enumerate(s1_ids)}
        ent_eps: list[str] = []
        for e in ents[: p.entity_depth]:
            eps = [x for x in graph.episode_ids(e) if x in s1_rank]
            if eps:
                ent_eps.append(min(eps, key=s1_rank.__getitem__))
        ent_eps = list(dict.fromkeys(ent_eps))
        ep_scores = rrf(
            [s1_ids, fact_eps, s2_eps, ent_eps],
            k=p.rrf_k,
            weights=[1.0, p.fact_weight, p.s2_weight, p.entity_weight],
        )
        ranked_eps = sorted(ep_scores, key=lambda e: -ep_scores[e])
        # The LLM reranks a window of twice the budget per kind (the paper reranks the
        # union; a window keeps the prompt near 1,500 tokens).
        window = 2 * k if self.reranker is not None else k
        by_id = {h.id: h for h in s1_eps}
        missing = [e for e in ranked_eps[:window] if e not in by_id]
        if missing:
            for ep in self.store.get_episodes(graph.namespace, missing):
                by_id[ep.id] = documents.episode_hit(ep, 0.0)
        if self.reranker is not None:
            ranked_eps = await self._rerank(
                query,
                "episode",
                [e for e in ranked_eps[:window] if e in by_id],
                {e: h.text for e, h in by_id.items()},
            )
            facts = await self._rerank(
                query, "fact", facts[:two_k], {f: graph.facts[f].fact for f in facts}
            )
            ents = await self._rerank(
                query, "entity", ents[:two_k], {e: entity_text(graph, e) for e in ents}
            )
        ranked_eps = [e for e in ranked_eps if e in by_id]
        hits: list[Hit] = []
        for e in ranked_eps[:k]:
            h = by_id[e].model_copy()
            h.score = round(ep_scores.get(e, 0.0), 6)
            h.routes = sorted(set(h.routes) | {"system1"} | ({"system2"} if e in s2_set else set()))
            hits.append(h)
        s2_fact_set, s2_ent_set = set(s2_fact), set(s2_ent)
        for f in facts[:two_k]:
            fact = graph.facts[f]
            hits.append(
                Hit(
                    kind="fact",
                    id=f,
                    text=fact.fact,
                    score=round(fact_cos.get(f, 0.0), 6),
                    sources=graph.episode_ids(f),
                    spans=list(fact.sources),
                    routes=["system1"] + (["system2"] if f in s2_fact_set else []),
                    metadata={"valid_at": fact.valid_at.isoformat() if fact.valid_at else None},
                )
            )
        for e in ents[:two_k]:
            ent = graph.entities[e]
            cited = graph.episode_ids(e)
            hits.append(
                Hit(
                    kind="entity",
                    id=e,
                    text=entity_text(graph, e),
                    score=round(ent_cos.get(e, 0.0), 6),
                    sources=cited[:5],
                    routes=["system1"] + (["system2"] if e in s2_ent_set else []),
                    metadata={"tags": ent.tags, "episodes": len(cited)},
                )
            )
        return hits

    def _s1(self, index: RecordIndex, terms: list[str], qvec: np.ndarray) -> list[str]:
        p = self.params
        dense = [i for i, _ in index.dense(qvec, p.candidates)]
        bm25 = [i for i, _ in index.bm25(terms, p.candidates)]
        scores = rrf([dense, bm25], k=p.rrf_k)
        return sorted(scores, key=lambda i: -scores[i])

    def _fuse(self, rankings: list[list[str]]) -> list[str]:
        p = self.params
        scores = rrf(rankings, k=p.rrf_k)
        both = set(rankings[0]) & set(rankings[1]) if len(rankings) > 1 else set()
        for i in both:
            scores[i] *= 1 + p.agreement
        return sorted(scores, key=lambda i: -scores[i])

    async def _rerank(
        self, query: str, kind: str, ids: list[str], texts: dict[str, str]
    ) -> list[str]:
        assert self.reranker is not None
        if len(ids) <= 1:
            return ids
        order = await self.reranker(query, kind, [texts[i] for i in ids])
        seen = [ids[i] for i in dict.fromkeys(order) if 0 <= i < len(ids)]
        return seen + [i for i in ids if i not in set(seen)]


__all__ = ["MnemisParams", "MnemisRoute", "Selection"]
