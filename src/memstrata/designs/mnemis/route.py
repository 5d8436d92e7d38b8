"""The Mnemis recipe's retrieval: System-1 and System-2 routes, then fusion.

* **System-1** (section 2.3): episodes through :class:`EpisodeRoute`; entities by
  summary embedding and name + summary BM25; facts by fact embedding and fact BM25;
  each kind fused by RRF on its own and cut to ``k`` episodes, ``2k`` entities and facts.
* **System-2**: :mod:`memstrata.designs.mnemis.global_selection`, unranked sets
  (``system2 = false`` turns it off: the ``mnemis-no-s2`` ablation).
* **Fusion** (section 2.3): the union per kind, duplicates removed, re-ranked, and only
  then cut to the budgets. System-2's items enter the union unordered.

  - ``heuristic`` tier: no cross-encoder ships with the library, so the stand-in
    reranker scores every member of the union the same way whichever route found it:
    entities and facts by RRF of their cosine and BM25 ranks within the union, times
    ``1 + agreement`` when both routes found them. Episodes by RRF of System-1's ranking,
    the episodes behind the best facts, each top entity's best episode, System-2's
    episodes ordered by their support (how many selected entities cite them), the
    whole union read in context (each turn by the best cosine of itself and its
    neighbouring turns), and read in its session (each turn by the BM25 evidence of the
    turns around it).
  - ``llm`` tier: the LLM orders each kind's **whole union** (entities with the
    categories System-2 walked through, facts, episodes) as a listwise tournament
    (:mod:`memstrata.designs.mnemis.rerank`) whose every slot of the budget is the
    reranker's choice, then the budget is cut.

``pipeline = "paper"`` (the ``mnemis-paper`` recipe) is section 2.3 and nothing else:
:mod:`memstrata.designs.mnemis.paper_route`. What both pipelines share (System-1 over
entities and facts, System-2, the rerankers, the hits) is in
:mod:`memstrata.designs.mnemis.search`.

An LLM failure never fails a search: a failed or unusable System-2 selection gives way to
the heuristic one for that query, a failed rerank call leaves its window in the order it
came in, and each is counted in :attr:`MnemisRoute.fallbacks`.

Hits come out episodes first, then facts, then entities: the answer model reads the raw
turns first, and ``Recall@K`` over distinct sources measures the episode ranking.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memstrata.designs.mnemis.builder import BUILDER, plain_text
from memstrata.designs.mnemis.calls import node_selector
from memstrata.designs.mnemis.global_selection import Selection, SelectionParams
from memstrata.designs.mnemis.graph import SPEAKER_CATEGORY, Graph
from memstrata.designs.mnemis.hierarchy import Hierarchy
from memstrata.designs.mnemis.paper_route import PaperSearch
from memstrata.designs.mnemis.rerank import llm_reranker
from memstrata.designs.mnemis.search import (
    Indexes,
    Search,
    admit,
    entity_hits,
    entity_text,
    fact_hits,
    fact_text,
)
from memstrata.embed.base import Embedder
from memstrata.embed.cache import embed_cached
from memstrata.engine.contracts import Context, Route
from memstrata.models import Episode, Hit
from memstrata.retrieval import documents
from memstrata.retrieval.rank_fusion import rrf
from memstrata.retrieval.record_index import RecordIndex
from memstrata.retrieval.system1 import DEFAULT_SYSTEM1, System1Params
from memstrata.retrieval.text import content_terms
from memstrata.store.base import SearchFilters, Store


class MnemisParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: the System-1 episode route this one builds on (the ``default`` recipe's knobs)
    # ``default``'s knobs without System-1's list of the words around a turn: this route
    # ranks its union in its session itself (``session_weight`` below), and the two
    # stacked cost BEAM dev 0.031 (docs/benchmarks.md, "The evidence around a turn")
    system1: System1Params = Field(
        default_factory=lambda: DEFAULT_SYSTEM1.model_copy(update={"session_weight": 0.0})
    )
    candidates: int = 50
    rrf_k: int = 20
    agreement: float = 0.5
    # Measured on the LoCoMo dev split (docs/benchmarks.md): the facts' episodes at 0.3
    # raised Recall@10. System-2's episodes ranked by support, at 0.15, 0.3, 0.5 and 1.0,
    # lowered overall Recall@10 (docs/mnemis.md has the sweep), so in the heuristic tier
    # they join the union last and reach the top through the facts and entities System-2
    # selects. The llm tier's reranker reads the whole union either way.
    fact_weight: float = 0.3
    s2_weight: float = 0.0
    # One episode per top fused entity (the one System-1 ranks best): a multi-hop
    # question's evidence is spread over several entities. 0.3 and 10 raised multi-hop
    # Recall@10 by 0.07; weights of 0.5 and more, or 20 entities, cost overall recall.
    entity_weight: float = 0.3
    entity_depth: int = 10
    # The union read in context: each member ranked by the best cosine of itself and its
    # neighbouring turns in the same session ("Yes, loved it!" after "Did you enjoy the
    # trip?"). Swept 0.1-0.5 on the dev split (docs/mnemis.md): flat from 0.2 to 0.5.
    context_weight: float = 0.3
    # A turn longer than the embedder reads (MiniLM: 256 tokens, about 1,000 characters)
    # has a vector of its opening only; it is left out of the in-context ranking, where
    # that vector would outweigh the BM25 evidence System-1 found further in.
    context_max_chars: int = 1000
    # The union read in its session: each member ranked by the BM25 evidence of itself and
    # the turns within ``session_window`` of it in the same session (among the query's
    # ``candidates`` best BM25 episodes). A question's evidence clusters where its topic is
    # discussed; this finds the second turn of a two-turn answer that the query's own
    # words miss. Swept on the dev split (docs/mnemis.md): weights 0.2-0.5 and windows
    # 5-20 or the whole session within 0.005 of each other.
    session_weight: float = 0.3
    session_window: int = 10
    system2: bool = True
    #: at most this share of the entity budget goes to selected categories (the
    #: heuristic tier; the llm tier's reranker places them among the entities)
    category_share: float = 0.2
    selection: SelectionParams = Field(default_factory=SelectionParams)
    #: whose records to read: ``mnemis``'s or ``mnemis-paper``'s builder
    builder: str = BUILDER
    #: ``fused``: ours (the module's docstring); ``paper``: section 2.3 alone, with
    #: appendix D's selection prompt in the paper's words
    pipeline: Literal["fused", "paper"] = "fused"


@dataclass(frozen=True)
class EpisodeUnion:
    """The rankings one query's episode union is fused from, for analysis: System-1's, the
    episodes behind the best facts, System-2's by support, each top entity's best one, the
    union read in context, and read in its session."""

    query: str
    system1: list[str]
    facts: list[str]
    system2: list[str]
    entities: list[str]
    context: list[str] = field(default_factory=list)
    session: list[str] = field(default_factory=list)

    def rankings(self) -> list[list[str]]:
        """The six rankings, in the order their fusion weights are given."""
        return [
            self.system1,
            self.facts,
            self.system2,
            self.entities,
            self.context,
            self.session,
        ]


@dataclass
class _Found:
    """One query's entity, fact and category candidates: by route as found, then each
    kind's union in the order the reranker gave it (``ents``, ``facts``, ``cats``)."""

    sel: Selection
    s1_ent: list[str]
    s1_fact: list[str]
    s2_ent: list[str]
    s2_fact: list[str]
    cats: list[str]
    ents: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)


class MnemisRoute(Route[MnemisParams]):
    """Dual-route retrieval over one namespace's Mnemis graph: episodes, facts, entities."""

    name = "mnemis"
    surfaces_unbuilt = True  # System-1 ranks every stored episode
    Params = MnemisParams
    needs = (BUILDER,)

    def __init__(self, params: MnemisParams | None = None) -> None:
        super().__init__(params)
        self._indexes: dict[str, Indexes] = {}
        #: LLM failures the searches fell back from since the route was made:
        #: ``select_failed``, queries whose System-2 ran the heuristic selection;
        #: ``rerank_failed``, rerank windows left in the order they came in. The failed
        #: calls are in the LLM usage too, as failures of ``mnemis.select`` and
        #: ``mnemis.rerank``.
        self.fallbacks: Counter[str] = Counter()

    async def search(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None = None,
    ) -> list[list[Hit]]:
        paper = self.params.pipeline == "paper"
        selector = reranker = None
        if ctx.tier == "llm" and ctx.llm is not None:
            llm = ctx.llm.scoped(namespace=namespace)
            selector, reranker = node_selector(llm, paper=paper), llm_reranker(llm)
        run = (PaperSearch if paper else _FusedSearch)(self, ctx, selector, reranker)
        return await run.search(namespace, queries, k, filters)

    def index(self, store: Store, embedder: Embedder, graph: Graph) -> Indexes:
        key = graph.namespace if graph.builder == BUILDER else f"{graph.builder}:{graph.namespace}"
        cached = self._indexes.get(key)
        if cached is not None and cached.stamp == graph.stamp:
            return cached
        eids = list(graph.entities)
        etexts = [entity_text(graph, i) for i in eids]
        # Invalidated facts stay searchable: their validity window is part of the answer.
        fids = list(graph.facts)
        ftexts = [graph.facts[f].fact for f in fids]
        cids = list(graph.categories)
        ctexts = [entity_text(graph, c) for c in cids]
        vecs = embed_cached(store, embedder, etexts + ftexts + ctexts)
        nf = len(eids) + len(fids)
        idx = Indexes(
            graph.stamp,
            RecordIndex(eids, etexts, vecs[: len(eids)]),
            RecordIndex(fids, ftexts, vecs[len(eids) : nf]),
            RecordIndex(cids, ctexts, vecs[nf:]),
        )
        self._indexes[key] = idx
        return idx


class _FusedSearch(Search):
    """One search call of the fused pipeline (the module's docstring)."""

    def _pool(self, k: int) -> int:
        return max(k, self.params.candidates)  # a wider pool to fuse

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
        """Select (System-1 and Global Selection), rank the entities and facts, fuse the
        episode union, then the hits: episodes, facts, entities."""
        terms = content_terms(query)
        found = await self._select(graph, hierarchy, idx, query, qvec, terms, admitted)
        await self._rank(graph, idx, query, qvec, terms, found, 2 * k)
        union, episodes, support = await asyncio.to_thread(
            self._union, graph, query, qvec, terms, s1_eps, found, admitted
        )
        ranked, by_id, scores = await self._fuse(union, episodes, s1_eps, k)
        hits: list[Hit] = []
        s1_rank, s2_set = set(union.system1), set(support)
        for e in ranked[:k]:
            h = by_id[e].model_copy()
            h.score = round(scores.get(e, 0.0), 6)
            h.routes = sorted(
                set(h.routes)
                | ({"system1"} if e in s1_rank else set())
                | ({"system2"} if e in s2_set else set())
            )
            hits.append(h)
        two_k = 2 * k
        hits += fact_hits(graph, idx, qvec, found.facts[:two_k], found.s1_fact, found.s2_fact)
        # Selected categories (section 2.3: "Entities (Categories)") share the entity
        # budget; they inform the answer model and never rank episodes.
        ents = found.cats + found.ents[: two_k - len(found.cats)]
        hits += entity_hits(graph, idx, qvec, ents, found.s1_ent, found.s2_ent)
        return hits

    async def _select(
        self,
        graph: Graph,
        hierarchy: Hierarchy,
        idx: Indexes,
        query: str,
        qvec: np.ndarray,
        terms: list[str],
        admitted: set[str] | None,
    ) -> _Found:
        """The entities and facts System-1 finds, and what System-2's Global Selection
        selects (entities, facts, the categories it walked through)."""
        sel = await self._global_selection(graph, hierarchy, query, qvec, terms)
        return _Found(
            sel=sel,
            s1_ent=admit(graph, self._s1(idx.entities, terms, qvec), admitted),
            s1_fact=admit(graph, self._s1(idx.facts, terms, qvec), admitted),
            s2_ent=admit(graph, list(dict.fromkeys(sel.entities + sel.linked_entities)), admitted),
            s2_fact=admit(graph, [f for f in sel.facts if f in idx.facts.row], admitted),
            cats=self._categories(graph, idx, qvec, sel, admitted),
        )

    async def _rank(
        self,
        graph: Graph,
        idx: Indexes,
        query: str,
        qvec: np.ndarray,
        terms: list[str],
        found: _Found,
        two_k: int,
    ) -> None:
        """Order each kind's union: the heuristic stand-in reranker, or the LLM's (which
        places the categories among the entities)."""
        if self.reranker is None:
            found.ents = self._rerank_union(idx.entities, terms, qvec, found.s1_ent, found.s2_ent)
            found.facts = self._rerank_union(idx.facts, terms, qvec, found.s1_fact, found.s2_fact)
            # Categories take up to ``category_share`` of the entity budget, most
            # similar first.
            found.cats = found.cats[: int(self.params.category_share * two_k)]
            return
        ent_union = list(dict.fromkeys(found.s1_ent + found.s2_ent + found.cats))
        ents = await self._rerank(
            query, "entity", ent_union, lambda e: entity_text(graph, e), two_k
        )
        found.facts = await self._rerank(
            query,
            "fact",
            list(dict.fromkeys(found.s1_fact + found.s2_fact)),
            lambda f: fact_text(graph, f),
            two_k,
        )
        found.cats = [e for e in ents[:two_k] if e in graph.categories]
        found.ents = [e for e in ents if e not in graph.categories]

    def _union(
        self,
        graph: Graph,
        query: str,
        qvec: np.ndarray,
        terms: list[str],
        s1_eps: list[Hit],
        found: _Found,
        admitted: set[str] | None,
    ) -> tuple[EpisodeUnion, dict[str, Episode], dict[str, int]]:
        """The episode union's rankings (System-1's, the episodes behind the best facts,
        System-2's by support, each top entity's best System-1 episode, the union read in
        context and in its session), its episodes, and System-2's support. Reads the
        store: it runs on a worker thread."""
        p = self.params
        s1_ids = [h.id for h in s1_eps]
        s1_rank = {e: i for i, e in enumerate(s1_ids)}
        fact_eps = _admit_eps(
            dict.fromkeys(e for f in found.facts[: p.candidates] for e in graph.episode_ids(f)),
            admitted,
        )
        ent_eps: list[str] = []
        for e in found.ents[: p.entity_depth]:
            eps = [x for x in graph.episode_ids(e) if x in s1_rank]
            if eps:
                ent_eps.append(min(eps, key=s1_rank.__getitem__))
        ent_eps = list(dict.fromkeys(ent_eps))
        support = {e: n for e, n in found.sel.support.items() if admitted is None or e in admitted}
        s2_eps = sorted(support, key=lambda e: (-support[e], s1_rank.get(e, len(s1_rank))))
        union = list(dict.fromkeys(s1_ids + fact_eps + s2_eps + ent_eps))
        episodes = {ep.id: ep for ep in self.store.get_episodes(graph.namespace, union)}
        in_context = self._in_context(qvec, episodes) if p.context_weight else []
        in_session = self._in_session(graph.namespace, terms, episodes) if p.session_weight else []
        fused = EpisodeUnion(query, s1_ids, fact_eps, s2_eps, ent_eps, in_context, in_session)
        return fused, episodes, support

    async def _fuse(
        self, union: EpisodeUnion, episodes: dict[str, Episode], s1_eps: list[Hit], k: int
    ) -> tuple[list[str], dict[str, Hit], dict[str, float]]:
        """The union's episodes fused by RRF, best first (then ordered by the LLM's
        reranker over the whole union, when there is one), each with a hit to copy, and
        their fused scores."""
        p = self.params
        ep_scores = rrf(
            union.rankings(),
            k=p.rrf_k,
            weights=[
                1.0,
                p.fact_weight,
                p.s2_weight,
                p.entity_weight,
                p.context_weight,
                p.session_weight,
            ],
        )
        ranked_eps = sorted(ep_scores, key=lambda e: -ep_scores[e])
        window = len(ranked_eps) if self.reranker is not None else k  # llm: the whole union
        by_id = {h.id: h for h in s1_eps}
        for e in ranked_eps[:window]:
            if e not in by_id and e in episodes:
                by_id[e] = documents.episode_hit(episodes[e], 0.0)
        ranked_eps = [e for e in ranked_eps[:window] if e in by_id]
        if self.reranker is not None:
            ranked_eps = await self._rerank(
                union.query, "episode", ranked_eps, lambda e: by_id[e].text, k
            )
        return ranked_eps, by_id, ep_scores

    def _categories(
        self,
        graph: Graph,
        idx: Indexes,
        qvec: np.ndarray,
        sel: Selection,
        admitted: set[str] | None,
    ) -> list[str]:
        """The most specific categories System-2 walked through, most similar first."""
        chosen = [
            c
            for c in sel.categories
            if c in graph.categories and graph.categories[c].name != SPEAKER_CATEGORY
        ]
        low = min((graph.categories[c].layer for c in chosen), default=0)
        chosen = [c for c in chosen if graph.categories[c].layer == low]
        if admitted is not None:
            chosen = [
                c
                for c in chosen
                if any(sp.episode in admitted for sp in graph.categories[c].sources)
            ]
        sims = idx.categories.similarity(qvec, chosen)
        return sorted(sims, key=lambda c: -sims[c])

    def _in_context(self, qvec: np.ndarray, episodes: dict[str, Episode]) -> list[str]:
        """The union's episodes by the best cosine among each one and its neighbouring
        turns of the same session, best first: a short reply is read with the question it
        answers. Neighbours only lend their similarity; they never join the union. Turns
        longer than ``context_max_chars`` are not ranked here."""
        limit = self.params.context_max_chars
        ranked = {ep.key: eid for eid, ep in episodes.items() if len(ep.text) <= limit}
        if not ranked:
            return []
        near = self.store.session_neighbours(list(ranked), 1)
        # every neighbour lends, even one outside the union or too long to be ranked
        by_key = {ep.key: ep for ep in episodes.values()}
        lenders = {n for ns in near.values() for n in ns}
        by_key.update(self.store.episodes_by_key(sorted(lenders - by_key.keys())))
        keys = [k for k in dict.fromkeys([*ranked, *lenders]) if k in by_key]
        vecs = embed_cached(self.store, self.embedder, [plain_text(by_key[k]) for k in keys])
        cos = dict(zip(keys, (vecs @ qvec).tolist(), strict=True))
        score = {
            ranked[key]: max([cos[key]] + [cos[n] for n in near.get(key, []) if n in cos])
            for key in ranked
        }
        return sorted(score, key=lambda e: -score[e])

    def _in_session(
        self, namespace: str, terms: list[str], episodes: dict[str, Episode]
    ) -> list[str]:
        """The union's episodes by the summed BM25 scores of themselves and the turns
        within ``session_window`` of them in the same session, best first; members with no
        lexical evidence around them are left out. Like the in-context ranking, the
        neighbours only lend: they never join the union."""
        if not terms or not episodes:
            return []
        bm25 = dict(self.store.bm25_episodes(namespace, terms, self.params.candidates))
        if not bm25:
            return []
        keys = {ep.key: eid for eid, ep in episodes.items()}
        near = self.store.session_neighbours(list(keys), self.params.session_window)
        score = {
            eid: bm25.get(key, 0.0) + sum(bm25.get(n, 0.0) for n in near.get(key, []))
            for key, eid in keys.items()
        }
        return sorted((e for e in score if score[e] > 0), key=lambda e: -score[e])


def _admit_eps(eps: dict[str, None], admitted: set[str] | None) -> list[str]:
    return [e for e in eps if admitted is None or e in admitted]


__all__ = ["EpisodeUnion", "MnemisParams", "MnemisRoute", "Selection"]
