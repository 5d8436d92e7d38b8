"""The PersonalAI builder: episodes folded into the graph, batch by batch (heuristic tier)
or episode by episode (llm tier).

The heuristic tier writes a whole batch's records and done marks in one transaction. The
llm tier writes each episode's in its own transaction, so an episode whose model answer
cannot be read (or whose call fails) is marked failed, the in-memory graph is reloaded
from the store, and nothing of that episode half-applies. A failed replacement step
(appendix B) is the exception: the episode's extraction is written, and the episode is
marked failed so that ``memstrata retry`` runs it again (nothing is added twice).
Vectors of new object names and theses are computed here, into the store's embedding
cache, so a search does not wait for them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from memstrata import nlp
from memstrata.designs.personalai.graph import BUILDER, PAGraph
from memstrata.designs.personalai.memorize import STAGE, MemorizeParams, Memorizer
from memstrata.designs.personalai.repair import repair_graph
from memstrata.embed.base import Embedder
from memstrata.embed.cache import ensure_embedded
from memstrata.engine.contracts import Builder, Context, StepResult, forgotten_on_failure
from memstrata.errors import ConfigError
from memstrata.llm.types import LLMError
from memstrata.models import Episode
from memstrata.store.base import Repairs, Store

KINDS = ("entity", "fact", "thesis")


class GraphCache:
    """One loaded :class:`PAGraph` per namespace, reloaded when another writer changed it."""

    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self._graphs: dict[str, PAGraph] = {}

    def get(self, namespace: str) -> PAGraph:
        cached = self._graphs.get(namespace)
        if cached is not None and cached.is_current():
            return cached
        graph = PAGraph.load(self.store, self.embedder, namespace)
        self._graphs[namespace] = graph
        return graph

    def forget(self, namespace: str) -> None:
        self._graphs.pop(namespace, None)


def graph_cache(ctx: Context) -> GraphCache:
    """The process-wide graph cache that the builder and the route share."""
    return ctx.state("personalai.graphs", lambda: GraphCache(ctx.store, ctx.embedder))


def _embed_new(graph: PAGraph, ids: set[str]) -> None:
    """Vectors of new node texts (object names, theses); triplets are embedded when the
    triplets filter first meets them: most never pass through a search, and embedding
    them all doubled the build time of the HotpotQA sample."""
    texts = [graph.objects[i].name for i in ids if i in graph.objects]
    texts += [graph.theses[i].text for i in ids if i in graph.theses]
    ensure_embedded(graph.store, graph.embedder, texts)


class PersonalAIBuilder(Builder[MemorizeParams]):
    """Object nodes, triplets and theses (episodes are the store's own) with provenance."""

    name = BUILDER
    kinds = KINDS
    Params = MemorizeParams
    stage_prefix = STAGE

    async def update(self, ctx: Context, namespace: str, episodes: Sequence[Episode]) -> StepResult:
        cache = graph_cache(ctx)
        graph = await asyncio.to_thread(cache.get, namespace)
        if ctx.tier == "llm":
            return await self._llm(ctx, cache, graph, namespace, list(episodes))
        with forgotten_on_failure(cache.forget, namespace):
            await asyncio.to_thread(self._heuristic, graph, list(episodes))
        return StepResult()

    def _heuristic(self, graph: PAGraph, episodes: list[Episode]) -> None:
        mem = Memorizer(graph, self.params)
        nlp.analyse([ep.text for ep in episodes])  # one pass of the pipeline for the batch
        for ep in episodes:
            mem.heuristic(ep)
        mem.heuristic_outdated(episodes)
        _embed_new(graph, graph.dirty())
        graph.flush((self.name, [ep.key for ep in episodes]))

    async def _llm(
        self,
        ctx: Context,
        cache: GraphCache,
        graph: PAGraph,
        namespace: str,
        episodes: list[Episode],
    ) -> StepResult:
        if ctx.llm is None:
            raise ConfigError(
                "the llm tier needs an LLM; configure llm.kind or use --tier heuristic"
            )
        llm = ctx.llm.scoped(namespace=namespace)
        failed: dict[str, str] = {}
        for ep in episodes:
            mem = Memorizer(graph, self.params)
            try:
                with forgotten_on_failure(cache.forget, namespace):
                    await mem.llm(ep, llm)
                    await asyncio.to_thread(_embed_new, graph, graph.dirty())
                    await asyncio.to_thread(graph.flush, (self.name, [ep.key]))
            except (LLMError, ValueError) as exc:
                failed[ep.id] = f"{type(exc).__name__}: {exc}"
                graph = await asyncio.to_thread(cache.get, namespace)
            else:
                if mem.stage_errors:  # written, and queued again for the failed stage
                    failed[ep.id] = "extraction kept; " + "; ".join(mem.stage_errors)
            ctx.advance(1)
        return StepResult(failed=failed)

    async def rebuild(self, ctx: Context, namespace: str) -> None:
        await super().rebuild(ctx, namespace)
        graph_cache(ctx).forget(namespace)

    async def repair(self, ctx: Context, namespace: str, work: Repairs) -> None:
        """Objects, triplets and theses without the removed text
        (:mod:`memstrata.designs.personalai.repair`)."""
        cache = graph_cache(ctx)
        cache.forget(namespace)
        graph = await asyncio.to_thread(cache.get, namespace)
        try:
            await asyncio.to_thread(repair_graph, graph, work)
            await asyncio.to_thread(graph.flush)
        finally:
            cache.forget(namespace)

    async def describe(self, ctx: Context, namespace: str) -> dict[str, Any]:
        graph = await asyncio.to_thread(graph_cache(ctx).get, namespace)
        topo = await asyncio.to_thread(graph.topology)
        episodes = sum(1 for k in topo.keys if k[0] == "e")
        return {
            "nodes": len(topo),
            "objects": len(graph.objects),
            "theses": len(graph.valid_theses()),
            "episodes": episodes,
            "triplets": len(graph.valid_triplets()),
            "edges": topo.g.num_edges(),
            "replaced": sum(1 for f in graph.triplets.values() if f.invalid_at is not None)
            + sum(1 for t in graph.theses.values() if t.invalid_at is not None),
        }

    async def check(self, ctx: Context, namespace: str) -> list[str]:
        graph = await asyncio.to_thread(graph_cache(ctx).get, namespace)
        problems = []
        for f in graph.triplets.values():
            for end in (f.subject_id, f.object_id):
                if end not in graph.objects:
                    problems.append(f"triplet {f.id} points to a missing object {end}")
            for r in f.replaced_by:
                if r not in graph.triplets:
                    problems.append(f"triplet {f.id} was replaced by a missing triplet {r}")
        for t in graph.theses.values():
            for r in t.replaced_by:
                if r not in graph.theses:
                    problems.append(f"thesis {t.id} was replaced by a missing thesis {r}")
        return problems
