"""The ``mindgraph`` route (memory mode): nodes and their source windows as hits.

Rankings of source episodes, fused by weighted RRF:

* **System-1** over the episodes (:class:`EpisodeRoute`, the ``default`` recipe's
  knobs): the raw turns stay the backbone of recall;
* **node content**: cosine of the query to each node (claims, stats, events,
  concepts) and BM25 over their contents (speaker names the query mentions left out, as
  System-1 does), each episode at the rank of its best node;
* **graph**: the entities the query names (speakers excepted: they are in every turn)
  pass their ``mentioned_in`` / ``stated_in`` neighbours on, best cosine first, so a
  question about a person or a thing reaches the claims about it in other words.

One hit per source episode, the episode's best-ranked node: ``kind="concept_node"``,
the text the node's source window (the episode as the answer model reads it) after the
node's content when that differs, ``spans`` the node's quote spans, ``metadata`` the
node's id, type and content. Search filters apply to the source episodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memstrata.designs.mindgraph.builder import BUILDER
from memstrata.designs.mindgraph.records import ConceptEdge, ConceptNode
from memstrata.embed.cache import embed_cached
from memstrata.engine.contracts import BlockingRoute, Context
from memstrata.models import Hit
from memstrata.retrieval import documents
from memstrata.retrieval.rank_fusion import rrf
from memstrata.retrieval.record_index import RecordIndex
from memstrata.retrieval.system1 import DEFAULT_SYSTEM1, EpisodeRoute, System1Params, plan_query
from memstrata.retrieval.text import content_terms, words
from memstrata.store.base import SearchFilters


class MindGraphRouteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # System-1's links (link_boost) are off here: on BEAM dev they cost this route's
    # Recall@10 more than 0.005 (docs/benchmarks.md, "Links between the steps").
    system1: System1Params = Field(
        default_factory=lambda: DEFAULT_SYSTEM1.model_copy(update={"link_boost": 0.0})
    )
    candidates: int = Field(default=100, ge=1, description="per ranking, before fusion")
    rrf_k: int = Field(default=20, ge=1)
    system1_weight: float = Field(default=1.0, ge=0)
    # Swept on the LoCoMo dev split (docs/mindgraph.md): node rankings at 0.25 raise
    # Recall@5/10/20 over System-1 alone; the entity ranking lowered Recall@10 at every
    # weight tried (0.25, 0.5), so it is off by default.
    node_weight: float = Field(default=0.25, ge=0, description="node cosine and BM25, each")
    graph_weight: float = Field(default=0.0, ge=0, description="the named entities' nodes")


@dataclass
class _Index:
    stamp: tuple[int, str]
    nodes: dict[str, ConceptNode]
    index: RecordIndex
    entity_terms: dict[str, set[str]]  # entity record id -> its name's terms
    linked: dict[str, list[str]]  # entity record id -> nodes it is mentioned in
    of_episode: dict[str, list[str]]  # episode id -> its nodes (not entities), in order
    edges: list[ConceptEdge]  # the namespace graph's edges (the answerer reads them)


def _load(ctx: Context, namespace: str) -> _Index:
    stamp = ctx.store.records_stamp(namespace)
    nodes = {
        r.id: r
        for r in ctx.store.get_records(namespace, "concept_node", builder=BUILDER)
        if isinstance(r, ConceptNode) and r.graph == "" and r.sources
    }
    ids = [i for i, n in nodes.items() if n.node_type != "entity"]
    texts = [nodes[i].description for i in ids]
    vecs = embed_cached(ctx.store, ctx.embedder, texts) if texts else np.zeros((0, 1))
    norms = np.linalg.norm(vecs, axis=-1, keepdims=True) if len(texts) else 1.0
    unit = (vecs / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    entity_terms = {
        i: set(content_terms(n.description)) for i, n in nodes.items() if n.node_type == "entity"
    }
    edges = [
        e
        for e in ctx.store.get_records(namespace, "concept_edge", builder=BUILDER)
        if isinstance(e, ConceptEdge) and e.graph == ""
    ]
    linked: dict[str, list[str]] = {}
    for e in edges:
        if e.source_id in entity_terms and e.target_id in nodes:
            linked.setdefault(e.source_id, []).append(e.target_id)
    of_episode: dict[str, list[str]] = {}
    for i in ids:
        of_episode.setdefault(nodes[i].sources[0].episode, []).append(i)
    return _Index(
        stamp, nodes, RecordIndex(ids, texts, unit), entity_terms, linked, of_episode, edges
    )


def graph_index(ctx: Context, namespace: str) -> _Index:
    """The namespace graph's nodes and edges as the route reads them, cached until the
    records change (the answerer reads the same copy)."""
    cache: dict[str, _Index] = ctx.state("mindgraph.route", dict)
    held = cache.get(namespace)
    if held is None or held.stamp != ctx.store.records_stamp(namespace):
        held = cache[namespace] = _load(ctx, namespace)
    return held


class MindGraphRoute(BlockingRoute[MindGraphRouteParams]):
    name = "mindgraph"
    Params = MindGraphRouteParams
    needs = (BUILDER,)

    def search_now(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None,
    ) -> list[list[Hit]]:
        idx = graph_index(ctx, namespace)
        if not len(idx.index) or k < 1:
            return [[] for _ in queries]
        p = self.params
        qvecs = np.asarray(ctx.embedder.embed(queries), dtype=np.float32)
        norms = np.linalg.norm(qvecs, axis=-1, keepdims=True)
        qvecs = (qvecs / np.where(norms == 0, 1.0, norms)).astype(np.float32)
        s1 = EpisodeRoute(ctx.store, ctx.embedder, p.system1).search(
            namespace, queries, p.candidates, filters, qvecs
        )
        speakers = ctx.store.speakers(namespace)
        spoken = {w for sp in speakers for w in words(sp)}
        out = []
        for query, qvec, s1_hits in zip(queries, qvecs, s1, strict=True):
            terms = plan_query(query, speakers, p.system1).terms
            cos = idx.index.cosine(qvec)
            dense = [i for i, _ in idx.index.dense(qvec, p.candidates)]
            bm25 = [i for i, _ in idx.index.bm25(terms, p.candidates)]
            named = [
                e
                for e, t in idx.entity_terms.items()
                if t and t <= set(content_terms(query)) and not t <= spoken
            ]
            via = {n for e in named for n in idx.linked.get(e, []) if n in cos}
            graph = sorted(via, key=lambda n: -cos[n])[: p.candidates]
            best: dict[str, str] = {}  # episode -> its best node, in the first ranking
            rankings: list[list[str]] = [[h.id for h in s1_hits]]
            for ranking in (dense, bm25, graph):
                eps = []
                for nid in ranking:
                    ep = idx.nodes[nid].sources[0].episode
                    best.setdefault(ep, nid)
                    eps.append(ep)
                rankings.append(list(dict.fromkeys(eps)))
            w = [p.system1_weight, p.node_weight, p.node_weight, p.graph_weight]
            fused = rrf(rankings, k=p.rrf_k, weights=w)
            ranked = sorted(fused, key=lambda e: -fused[e])
            picks: list[tuple[str, str | None]] = [
                (e, best.get(e) or next(iter(idx.of_episode.get(e, [])), None)) for e in ranked
            ]
            out.append(self._hits(ctx, namespace, idx, picks, fused, k, filters))
        return out

    def _hits(
        self,
        ctx: Context,
        namespace: str,
        idx: _Index,
        picks: list[tuple[str, str | None]],
        scores: dict[str, float],
        k: int,
        filters: SearchFilters | None,
    ) -> list[Hit]:
        """One hit per episode (its node), best first; episodes the graph has no node
        of are skipped (they are not folded in yet, or hold no sentence)."""
        window = [(e, n) for e, n in picks if n is not None][: max(4 * k, k + 16)]
        eps = {e.id: e for e in ctx.store.get_episodes(namespace, [e for e, _ in window])}
        if filters is not None and not filters.is_empty():
            eps = {i: e for i, e in eps.items() if filters.admits(e)}
        hits: list[Hit] = []
        for eid, nid in window:
            ep = eps.get(eid)
            if ep is None or nid is None:
                continue
            node = idx.nodes[nid]
            source = documents.episode_hit(ep, 0.0).text
            content = node.description.split(": ", 1)[-1]
            text = source if content in source else f"{node.description} — {source}"
            hits.append(
                Hit(
                    kind="concept_node",
                    id=nid,
                    text=text,
                    score=round(scores[eid], 6),
                    sources=[ep.id],
                    spans=[s for s in node.sources if s.episode == ep.id],
                    routes=["mindgraph"],
                    metadata={
                        "node": node.label,
                        "type": node.node_type,
                        "content": node.description,
                    },
                )
            )
            if len(hits) >= k:
                break
        return hits
