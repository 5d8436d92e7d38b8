"""The ``mnemis-paper`` recipe's pipeline (``pipeline = "paper"``): section 2.3 and
nothing else.

System-1 is plain dense and BM25 search fused by RRF, cut to ``k`` episodes and ``2k``
entities and facts; the union per kind is System-1's cut plus everything System-2
reached, the categories it selected at *every* layer it walked among the entities; each
union is reranked whole (``llm`` tier: the tournament; ``heuristic`` tier: the stand-in's
one score, for episodes too) and cut to the budgets. None of the fused recipe's episode
rankings (the facts', the entities', in context, in session) take part.
"""

from __future__ import annotations

import numpy as np

from memstrata.designs.mnemis.builder import plain_text
from memstrata.designs.mnemis.graph import Graph
from memstrata.designs.mnemis.hierarchy import Hierarchy
from memstrata.designs.mnemis.search import (
    Indexes,
    Search,
    admit,
    entity_hits,
    entity_text,
    fact_hits,
    fact_text,
)
from memstrata.embed.cache import embed_cached
from memstrata.models import Hit
from memstrata.retrieval import documents
from memstrata.retrieval.record_index import RecordIndex
from memstrata.retrieval.text import content_terms


class PaperSearch(Search):
    """One search call of the paper's pipeline."""

    def _pool(self, k: int) -> int:
        return k  # the paper's System-1 brings its top k episodes

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
        """Section 2.3 alone: System-1's top ``k`` episodes and top ``2k`` entities and
        facts, each kind's union with what System-2 reached (its categories at every
        layer it walked among the entities), reranked whole, then cut to the budgets."""
        p = self.params
        terms = content_terms(query)
        two_k = 2 * k
        s1_ent = admit(graph, self._s1(idx.entities, terms, qvec, plain=True), admitted)
        s1_fact = admit(graph, self._s1(idx.facts, terms, qvec, plain=True), admitted)
        s1_ent, s1_fact = s1_ent[:two_k], s1_fact[:two_k]
        s1_ids = [h.id for h in s1_eps[:k]]
        sel = await self._global_selection(graph, hierarchy, query, qvec, terms)
        s2_ent = admit(graph, list(dict.fromkeys(sel.entities + sel.linked_entities)), admitted)
        s2_fact = admit(graph, [f for f in sel.facts if f in idx.facts.row], admitted)
        cats = [
            c
            for c in dict.fromkeys(sel.categories)
            if c in graph.categories
            and (
                admitted is None
                or any(sp.episode in admitted for sp in graph.categories[c].sources)
            )
        ]
        # System-2's episodes: every one its entities cite, unordered (its support order)
        s2_eps = [e for e in sel.support if admitted is None or e in admitted]
        wanted = list(dict.fromkeys(s1_ids + s2_eps))
        episodes = {ep.id: ep for ep in self.store.get_episodes(graph.namespace, wanted)}
        ep_union = [e for e in wanted if e in episodes]
        by_id = {h.id: h for h in s1_eps}
        for e in ep_union:
            if e not in by_id:
                by_id[e] = documents.episode_hit(episodes[e], 0.0)
        fact_union = list(dict.fromkeys(s1_fact + s2_fact))
        if self.reranker is not None:
            eps = await self._rerank(query, "episode", ep_union, lambda e: by_id[e].text, k)
            facts = await self._rerank(
                query, "fact", fact_union, lambda f: fact_text(graph, f), two_k
            )
            ents = await self._rerank(
                query,
                "entity",
                list(dict.fromkeys(s1_ent + s2_ent + cats)),
                lambda e: entity_text(graph, e),
                two_k,
            )
        else:
            texts = [plain_text(episodes[e]) for e in ep_union]
            vecs = embed_cached(self.store, self.embedder, texts)
            ep_index = RecordIndex(ep_union, texts, vecs)
            eps = self._rerank_union(ep_index, terms, qvec, s1_ids, s2_eps)
            facts = self._rerank_union(idx.facts, terms, qvec, s1_fact, s2_fact)
            # categories are scored apart (another index): their share of the budget
            # first, most similar first, as in the fused recipe
            sims = idx.categories.similarity(qvec, cats)
            top = sorted(cats, key=lambda c: -sims.get(c, -1.0))[: int(p.category_share * two_k)]
            ents = top + self._rerank_union(idx.entities, terms, qvec, s1_ent, s2_ent)
        s1_set, s2_set = set(s1_ids), set(s2_eps)
        hits: list[Hit] = []
        for rank, e in enumerate(eps[:k], start=1):
            h = by_id[e].model_copy()
            h.score = round(1.0 / rank, 6)  # the reranker's order is the score
            h.routes = sorted(
                set(h.routes)
                | ({"system1"} if e in s1_set else set())
                | ({"system2"} if e in s2_set else set())
            )
            hits.append(h)
        hits += fact_hits(graph, idx, qvec, facts[:two_k], s1_fact, s2_fact)
        hits += entity_hits(graph, idx, qvec, ents[:two_k], s1_ent, s2_ent)
        return hits
