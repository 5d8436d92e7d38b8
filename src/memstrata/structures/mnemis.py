"""``build`` for the Mnemis recipe: base graph, then hierarchy, resumable per episode.

Episodes are processed in batches; each batch's records and its progress marks are
written in one transaction, so a killed build resumes after the last whole batch. A
namespace without categories gets a full hierarchy build at the end; one that has them
gets its new entities placed incrementally. ``rebuild=True`` starts from nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from memstrata.embed.base import Embedder
from memstrata.errors import ConfigError
from memstrata.llm.base import LLMClient
from memstrata.models import Episode
from memstrata.store.base import Store
from memstrata.structures.base_graph import BaseGraphParams, HeuristicBaseGraph
from memstrata.structures.graph import Graph
from memstrata.structures.hierarchy import Hierarchy, HierarchyParams

BUILDER = "mnemis"
KINDS = ("entity", "fact", "category")
Tier = Literal["heuristic", "llm"]


@dataclass
class BuildReport:
    namespace: str
    tier: str
    episodes: int = 0
    entities: int = 0
    facts: int = 0
    categories: int = 0
    layers: list[int] = field(default_factory=list)
    hierarchy: str = "unchanged"
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    llm: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: int = 0
    errors: list[str] = field(default_factory=list)
    llm_failures: int = 0


class GraphCache:
    """One loaded :class:`Graph` and :class:`Hierarchy` per namespace, reloaded when some
    other writer changed the namespace's records."""

    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self._graphs: dict[str, tuple[Graph, Hierarchy]] = {}

    def get(self, namespace: str, params: HierarchyParams | None = None) -> tuple[Graph, Hierarchy]:
        cached = self._graphs.get(namespace)
        if cached is not None and cached[0].is_current():
            return cached
        graph = Graph.load(self.store, self.embedder, namespace)
        entry = (graph, Hierarchy(graph, params))
        self._graphs[namespace] = entry
        return entry

    def forget(self, namespace: str) -> None:
        self._graphs.pop(namespace, None)


class MnemisBuilder:
    """Runs the Mnemis builders of one tier over what a namespace already holds."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        *,
        tier: Tier = "heuristic",
        llm: LLMClient | None = None,
        cache: GraphCache | None = None,
        base_params: BaseGraphParams | None = None,
        hierarchy_params: HierarchyParams | None = None,
    ) -> None:
        if tier == "llm" and llm is None:
            raise ConfigError(
                "the llm tier needs an LLM; configure llm.kind or use --tier heuristic"
            )
        self.store = store
        self.embedder = embedder
        self.tier = tier
        self.llm = llm
        self.cache = cache or GraphCache(store, embedder)
        self.base_params = base_params
        self.hierarchy_params = hierarchy_params

    async def build(
        self,
        namespace: str,
        *,
        rebuild: bool = False,
        batch_size: int = 64,
        progress: Callable[[int], None] | None = None,
    ) -> BuildReport:
        t0 = time.perf_counter()
        report = BuildReport(namespace=namespace, tier=self.tier)
        if rebuild:
            await asyncio.to_thread(self.store.reset_build, namespace, BUILDER, KINDS)
            self.cache.forget(namespace)
        graph, hierarchy = await asyncio.to_thread(self.cache.get, namespace, self.hierarchy_params)
        had_hierarchy = bool(graph.categories)
        base = self._base(graph)
        done = await asyncio.to_thread(self.store.built_keys, namespace, BUILDER)
        after = 0
        t_base = t_hier = 0.0
        while True:
            page = await asyncio.to_thread(self.store.iter_episodes, namespace, after, 1000)
            if not page:
                break
            after = page[-1].key
            todo = [ep for ep in page if ep.key not in done]
            for start in range(0, len(todo), batch_size):
                batch = todo[start : start + batch_size]
                t1 = time.perf_counter()
                created = await self._add(base, batch)
                t2 = time.perf_counter()
                if had_hierarchy:
                    await asyncio.to_thread(hierarchy.place, created)
                    report.hierarchy = "incremental"
                t_hier += time.perf_counter() - t2
                t_base += t2 - t1
                failed = getattr(base, "failed", {})
                report.failures += len(failed)
                report.errors.extend(f"{k}: {v}" for k, v in list(failed.items())[:5])
                keys = [ep.key for ep in batch if ep.id not in failed]
                await asyncio.to_thread(graph.flush, (BUILDER, keys))
                report.episodes += len(batch)
                if progress:
                    progress(len(batch))
        if not graph.categories and graph.entities:
            t2 = time.perf_counter()
            grouper = self._grouper()
            report.layers = await hierarchy.rebuild(grouper)
            await asyncio.to_thread(graph.flush)
            report.hierarchy = "built"
            t_hier += time.perf_counter() - t2
        report.stage_seconds = {"base_graph": round(t_base, 3), "hierarchy": round(t_hier, 3)}
        if not report.layers:
            top = graph.top_layer()
            report.layers = [len(graph.layer(i)) for i in range(1, top + 1)]
        report.entities = len(graph.entities)
        report.facts = len(graph.facts)
        report.categories = len(graph.categories)
        report.seconds = round(time.perf_counter() - t0, 3)
        if self.llm is not None and self.tier == "llm":
            usage = await asyncio.to_thread(self.store.llm_usage, namespace)
            report.llm = {k: v for k, v in usage.items() if k.startswith("mnemis.")}
            report.llm_failures = sum(int(v.get("failures", 0)) for v in report.llm.values())
        return report

    def _base(self, graph: Graph) -> Any:
        if self.tier == "llm":
            from memstrata.structures.base_graph_llm import LLMBaseGraph

            assert self.llm is not None
            return LLMBaseGraph(graph, self.llm, self.base_params)
        return HeuristicBaseGraph(graph, self.base_params)

    async def _add(self, base: Any, batch: list[Episode]) -> list[str]:
        if self.tier == "llm":
            created: list[str] = await base.add(batch)
            return created
        return await asyncio.to_thread(base.add, batch)

    def _grouper(self) -> Any:
        if self.tier != "llm":
            return None
        from memstrata.prompts.mnemis import category_grouper

        assert self.llm is not None
        return category_grouper(self.llm)
