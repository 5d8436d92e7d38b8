"""The ``mindgraph`` route (memory mode): nodes and their source windows as hits.

Nodes other than entities (claims, stats, events, concepts) are ranked three ways, fused
by RRF: cosine of the query to the node's content, BM25 over the contents, and the
graph: the entities whose names the query mentions pass their ``mentioned_in`` /
``stated_in`` neighbours on, best cosine first (a question about a person reaches the
claims about them even in other words). One hit per source episode (its best node):
``kind="concept_node"``, the text the node's source window (the episode as the answer
model reads it) after its content, ``spans`` the node's quote spans, ``metadata`` the
node's id, type and content. Search filters apply to the source episodes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memstrata.designs.mindgraph.builder import BUILDER
from memstrata.embed.cache import embed_cached
from memstrata.engine.contracts import Context, Route
from memstrata.models import ConceptEdge, ConceptNode, Hit
from memstrata.retrieval import documents
from memstrata.retrieval.fusion import rrf
from memstrata.retrieval.record_index import RecordIndex
from memstrata.retrieval.text import content_terms
from memstrata.store.base import SearchFilters


class MindGraphRouteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    candidates: int = Field(default=100, ge=1, description="per ranking, before fusion")
    rrf_k: int = Field(default=20, ge=1)
    graph_weight: float = Field(default=0.5, ge=0, description="weight of the entity ranking")


@dataclass
class _Index:
    stamp: tuple[int, str]
    nodes: dict[str, ConceptNode]
    index: RecordIndex
    entity_terms: dict[str, set[str]]  # entity record id -> its name's terms
    linked: dict[str, list[str]]  # entity record id -> nodes it is mentioned in


def _load(ctx: Context, namespace: str) -> _Index:
    stamp = ctx.store.records_stamp(namespace)
    nodes = {
        r.id: r
        for r in ctx.store.get_records(namespace, "concept_node")
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
    linked: dict[str, list[str]] = {}
    for e in ctx.store.get_records(namespace, "concept_edge"):
        if isinstance(e, ConceptEdge) and e.source_id in entity_terms and e.target_id in nodes:
            linked.setdefault(e.source_id, []).append(e.target_id)
    return _Index(stamp, nodes, RecordIndex(ids, texts, unit), entity_terms, linked)


class MindGraphRoute(Route[MindGraphRouteParams]):
    name = "mindgraph"
    Params = MindGraphRouteParams
    needs = (BUILDER,)

    async def search(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None = None,
    ) -> list[list[Hit]]:
        return await asyncio.to_thread(self._search, ctx, namespace, queries, k, filters)

    def _index(self, ctx: Context, namespace: str) -> _Index:
        cache: dict[str, _Index] = ctx.state("mindgraph.route", dict)
        held = cache.get(namespace)
        if held is None or held.stamp != ctx.store.records_stamp(namespace):
            held = cache[namespace] = _load(ctx, namespace)
        return held

    def _search(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None,
    ) -> list[list[Hit]]:
        idx = self._index(ctx, namespace)
        if not len(idx.index) or k < 1:
            return [[] for _ in queries]
        p = self.params
        qvecs = np.asarray(ctx.embedder.embed(queries), dtype=np.float32)
        qvecs /= np.where(
            np.linalg.norm(qvecs, axis=-1, keepdims=True) == 0,
            1.0,
            np.linalg.norm(qvecs, axis=-1, keepdims=True),
        )
        out = []
        for query, qvec in zip(queries, qvecs, strict=True):
            terms = content_terms(query)
            cos = idx.index.cosine(qvec)
            dense = [i for i, _ in idx.index.dense(qvec, p.candidates)]
            bm25 = [i for i, _ in idx.index.bm25(terms, p.candidates)]
            named = [e for e, t in idx.entity_terms.items() if t and t <= set(terms)]
            via = {n for e in named for n in idx.linked.get(e, []) if n in cos}
            graph = sorted(via, key=lambda n: -cos[n])[: p.candidates]
            fused = rrf([dense, bm25, graph], k=p.rrf_k, weights=[1.0, 1.0, p.graph_weight])
            ranked = sorted(fused, key=lambda n: -fused[n])
            out.append(self._hits(ctx, namespace, idx, ranked, fused, k, filters))
        return out

    def _hits(
        self,
        ctx: Context,
        namespace: str,
        idx: _Index,
        ranked: list[str],
        scores: dict[str, float],
        k: int,
        filters: SearchFilters | None,
    ) -> list[Hit]:
        window = ranked[: max(4 * k, k + 16)]
        wanted = sorted({idx.nodes[n].sources[0].episode for n in window})
        eps = {e.id: e for e in ctx.store.get_episodes(namespace, wanted)}
        if filters is not None and not filters.is_empty():
            eps = {i: e for i, e in eps.items() if filters.admits(e)}
        hits: list[Hit] = []
        seen: set[str] = set()
        for nid in window:
            node = idx.nodes[nid]
            ep = eps.get(node.sources[0].episode)
            if ep is None or ep.id in seen:
                continue
            seen.add(ep.id)
            source = documents.episode_hit(ep, 0.0).text
            text = source if node.description in source else f"{node.description} — {source}"
            hits.append(
                Hit(
                    kind="concept_node",
                    id=nid,
                    text=text,
                    score=round(scores[nid], 6),
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
