"""System-1 over derived records of one kind: dense + BM25 over ``search_text``, RRF.

Any design's records (facts, entities, events, tree nodes, ...) become searchable by a
recipe without code of its own. It reads one builder's records: ``builder`` names it, and
when a recipe leaves it out, the engine gives it the recipe's own builder (designs share a
store, not records: Mnemis facts and PersonalAI triplets are both ``fact``). The index is
built in memory per (namespace, kind) and rebuilt when the namespace's records change
(``Store.records_stamp``); vectors come from
the embedding cache, so an unchanged record is never embedded twice. Superseded facts
(``invalid_at`` set) are left out unless ``include_invalid``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from memstrata.embed.cache import embed_cached
from memstrata.engine.contracts import BlockingRoute, Context
from memstrata.models import Derived, Hit
from memstrata.retrieval.rank_fusion import rrf
from memstrata.retrieval.record_index import RecordIndex
from memstrata.retrieval.text import content_terms
from memstrata.store.base import SearchFilters


class RecordsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = Field(default="fact", description="the record kind searched")
    builder: str | None = Field(
        default=None,
        description="whose records: a builder's name (default: the recipe's own builder)",
    )
    candidates: int = Field(default=50, ge=1)
    rrf_k: int = Field(default=60, ge=1)
    dense_weight: float = Field(default=1.0, ge=0)
    bm25_weight: float = Field(default=1.0, ge=0)
    include_invalid: bool = False


class _Index:
    def __init__(self, stamp: tuple[int, str], records: dict[str, Derived], index: RecordIndex):
        self.stamp = stamp
        self.records = records
        self.index = index


class RecordsRoute(BlockingRoute[RecordsParams]):
    """Hybrid search over the records of ``params.kind``; each hit cites its sources."""

    name = "records"
    Params = RecordsParams

    def __init__(self, params: RecordsParams | None = None) -> None:
        super().__init__(params)
        self._indexes: dict[str, _Index] = {}

    def _index(self, ctx: Context, namespace: str) -> _Index:
        stamp = ctx.store.records_stamp(namespace)
        held = self._indexes.get(namespace)
        if held is not None and held.stamp == stamp:
            return held
        recs = {
            r.id: r
            for r in ctx.store.get_records(namespace, self.params.kind, builder=self.params.builder)
            if self.params.include_invalid or getattr(r, "invalid_at", None) is None
        }
        ids = [i for i, r in recs.items() if r.search_text().strip()]
        texts = [recs[i].search_text() for i in ids]
        built = _Index(
            stamp, recs, RecordIndex(ids, texts, embed_cached(ctx.store, ctx.embedder, texts))
        )
        self._indexes[namespace] = built
        return built

    def search_now(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None,
    ) -> list[list[Hit]]:
        p = self.params
        held = self._index(ctx, namespace)
        if not len(held.index):
            return [[] for _ in queries]
        qvecs = ctx.embedder.embed(queries)
        out = []
        for query, qvec in zip(queries, qvecs, strict=True):
            dense = [i for i, _ in held.index.dense(qvec, p.candidates)]
            bm25 = [i for i, _ in held.index.bm25(content_terms(query), p.candidates)]
            scores = rrf([dense, bm25], k=p.rrf_k, weights=[p.dense_weight, p.bm25_weight])
            ranked = sorted(scores, key=lambda i: -scores[i])
            hits = [_hit(held.records[i], scores[i]) for i in ranked]
            if filters is not None and not filters.is_empty():
                hits = _filtered(ctx, namespace, hits, filters)
            out.append(hits)
        return out


def _hit(rec: Derived, score: float) -> Hit:
    return Hit(
        kind=rec.kind,
        id=rec.id,
        text=rec.search_text(),
        score=round(score, 6),
        sources=list(dict.fromkeys(s.episode for s in rec.sources)),
        spans=list(rec.sources),
        routes=["dense+bm25"],
    )


def _filtered(ctx: Context, namespace: str, hits: list[Hit], f: SearchFilters) -> list[Hit]:
    """Keep hits with at least one source episode that passes the filters."""
    wanted = list(dict.fromkeys(s for h in hits for s in h.sources))
    ok = {ep.id for ep in ctx.store.get_episodes(namespace, wanted) if f.admits(ep)}
    return [h for h in hits if any(s in ok for s in h.sources)]
