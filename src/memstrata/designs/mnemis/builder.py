"""The Mnemis builder: base graph, then hierarchy, folded in batch by batch.

Each batch's records and its done marks are written in one transaction
(:meth:`Graph.flush`), so a killed build resumes after the last whole batch. New entities
are placed into an existing hierarchy incrementally (in the ``llm`` tier, a full rebuild
with the appendix D prompt follows once :meth:`Hierarchy.degraded` says placement has
promoted too many nodes alone, and otherwise the categories whose children changed are
described again by the model); a namespace without one gets a full
hierarchy build in :meth:`MnemisBuilder.finish`, once the drain has folded in every
pending episode (so a first import builds the hierarchy over all of it at once).

:class:`MnemisPaperBuilder` (``mnemis-paper``) keeps records of its own: the paper's
hierarchy rules only (no stop at a small layer), the appendix D prompt as the paper
gives it, and the hierarchy rebuilt after each build that added entities (section 2.2:
"we periodically rebuild") instead of placed into incrementally.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memstrata.designs.mnemis.base_graph import BaseGraphParams, HeuristicBaseGraph
from memstrata.designs.mnemis.calls import category_describer, category_grouper
from memstrata.designs.mnemis.checks import hierarchy_problems
from memstrata.designs.mnemis.graph import BUILDER, PAPER_BUILDER, Graph
from memstrata.designs.mnemis.hierarchy import Hierarchy, HierarchyParams
from memstrata.designs.mnemis.repair import repair_graph
from memstrata.embed.base import Embedder
from memstrata.embed.cache import ensure_embedded
from memstrata.engine.contracts import Builder, Context, StepResult, forgotten_on_failure
from memstrata.errors import ConfigError
from memstrata.models import Episode
from memstrata.retrieval import documents
from memstrata.store.base import Repairs, Store

KINDS = ("entity", "fact", "category")


class GraphCache:
    """One loaded :class:`Graph` and :class:`Hierarchy` per namespace, reloaded when some
    other writer changed the namespace's records."""

    def __init__(self, store: Store, embedder: Embedder, builder: str = BUILDER) -> None:
        self.store = store
        self.embedder = embedder
        self.builder = builder
        self._graphs: dict[str, tuple[Graph, Hierarchy]] = {}

    def get(self, namespace: str, params: HierarchyParams | None = None) -> tuple[Graph, Hierarchy]:
        cached = self._graphs.get(namespace)
        if cached is not None and cached[0].is_current():
            return cached
        graph = Graph.load(self.store, self.embedder, namespace, self.builder)
        entry = (graph, Hierarchy(graph, params))
        self._graphs[namespace] = entry
        return entry

    def forget(self, namespace: str) -> None:
        self._graphs.pop(namespace, None)


def plain_text(ep: Episode) -> str:
    """An episode's words without its speaker's name, which the stored vector starts with:
    read in context, a turn should match a question by what was said, not who said it."""
    return documents.embed_text(ep.text, None, ep.metadata)


def graph_cache(ctx: Context, builder: str = BUILDER) -> GraphCache:
    """The process-wide graph cache of one builder's records, which the builder and the
    route share."""
    key = "mnemis.graphs" if builder == BUILDER else f"mnemis.graphs.{builder}"
    return ctx.state(key, lambda: GraphCache(ctx.store, ctx.embedder, builder))


class MnemisBuildParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base: BaseGraphParams = Field(default_factory=BaseGraphParams)
    hierarchy: HierarchyParams = Field(default_factory=HierarchyParams)
    #: the appendix D prompt as ``prompts.categorize`` writes it (``ours``) or as the
    #: paper gives it (``paper``)
    prompts: Literal["ours", "paper"] = "ours"
    #: new entities placed into the hierarchy (``place``, ours) or the hierarchy rebuilt
    #: after a build that added any (``rebuild``, the paper's periodic rebuild)
    upkeep: Literal["place", "rebuild"] = "place"


class MnemisPaperBuildParams(MnemisBuildParams):
    """The paper's values: no stop at a small layer, its prompt, its rebuild."""

    hierarchy: HierarchyParams = Field(default_factory=lambda: HierarchyParams(top_width=0))
    prompts: Literal["ours", "paper"] = "paper"
    upkeep: Literal["place", "rebuild"] = "rebuild"


class MnemisBuilder(Builder[MnemisBuildParams]):
    """Entities, facts (with validity windows) and the category hierarchy over entities."""

    name = BUILDER
    kinds = KINDS
    Params = MnemisBuildParams
    stage_prefix = "mnemis."

    async def update(self, ctx: Context, namespace: str, episodes: Sequence[Episode]) -> StepResult:
        cache = graph_cache(ctx, self.name)
        graph, hierarchy = await asyncio.to_thread(cache.get, namespace, self.params.hierarchy)
        with forgotten_on_failure(cache.forget, namespace):
            base = self._base(ctx, graph)
            batch = list(episodes)
            if ctx.tier == "llm":
                created: list[str] = await base.add(batch)
            else:
                created = await asyncio.to_thread(base.add, batch)
            # The search reads each turn in context through its speaker-free vector.
            await asyncio.to_thread(
                ensure_embedded, ctx.store, ctx.embedder, [plain_text(ep) for ep in batch]
            )
            if graph.categories and self.params.upkeep == "rebuild":
                pass  # rebuilt in finish(), over every entity the drain added
            elif graph.categories:
                await asyncio.to_thread(hierarchy.place, created)
                ctx.shared[f"{self.name}.hierarchy.{namespace}"] = "incremental"
                if ctx.tier == "llm" and hierarchy.degraded():
                    # The paper's periodic rebuild, run when placement has degraded it.
                    await hierarchy.rebuild(self._grouper(ctx))
                    ctx.shared[f"{self.name}.hierarchy.{namespace}"] = "rebuilt"
                elif ctx.tier == "llm" and ctx.llm is not None:
                    # Categories whose children changed are described again.
                    await hierarchy.redescribe(category_describer(ctx.llm))
                else:
                    hierarchy.forget_marks()
            failed: dict[str, str] = dict(getattr(base, "failed", {}))
            keys = [ep.key for ep in batch if ep.id not in failed]
            await asyncio.to_thread(graph.flush, (self.name, keys))
        return StepResult(failed=failed)

    async def finish(self, ctx: Context, namespace: str) -> None:
        cache = graph_cache(ctx, self.name)
        graph, hierarchy = await asyncio.to_thread(cache.get, namespace, self.params.hierarchy)
        if not graph.entities:
            return
        again = bool(graph.categories)
        if again and not (self.params.upkeep == "rebuild" and unplaced(graph)):
            return
        with forgotten_on_failure(cache.forget, namespace):
            await hierarchy.rebuild(self._grouper(ctx))
            await asyncio.to_thread(graph.flush)
            ctx.shared[f"{self.name}.hierarchy.{namespace}"] = "rebuilt" if again else "built"

    async def rebuild(self, ctx: Context, namespace: str) -> None:
        await super().rebuild(ctx, namespace)
        graph_cache(ctx, self.name).forget(namespace)
        ctx.shared.pop(f"{self.name}.base.{namespace}", None)

    async def repair(self, ctx: Context, namespace: str, work: Repairs) -> None:
        """Entities, facts and categories re-derived without the removed text
        (:mod:`memstrata.designs.mnemis.repair`)."""
        cache = graph_cache(ctx, self.name)
        cache.forget(namespace)
        ctx.shared.pop(f"{self.name}.base.{namespace}", None)  # the llm tier's recent turns
        graph, hierarchy = await asyncio.to_thread(cache.get, namespace, self.params.hierarchy)
        try:
            await asyncio.to_thread(repair_graph, graph, hierarchy, work, self.params.base)
            if self.params.upkeep == "rebuild" and graph.categories:
                await hierarchy.rebuild(self._grouper(ctx))
            elif ctx.tier == "llm" and ctx.llm is not None:
                # categories that lost a member are described again from the ones left
                await hierarchy.redescribe(category_describer(ctx.llm))
            else:
                hierarchy.forget_marks()
            await asyncio.to_thread(graph.flush)
        finally:
            cache.forget(namespace)

    async def describe(self, ctx: Context, namespace: str) -> dict[str, Any]:
        graph, hier = await asyncio.to_thread(
            graph_cache(ctx, self.name).get, namespace, self.params.hierarchy
        )
        top = graph.top_layer()
        return {
            # what the last drain did to the hierarchy: built, incremental or unchanged
            "hierarchy": ctx.shared.pop(f"{self.name}.hierarchy.{namespace}", "unchanged"),
            "entities": len(graph.entities),
            "facts": len(graph.facts),
            "categories": len(graph.categories),
            "layers": [len(graph.layer(i)) for i in range(1, top + 1)],
            "lone_share": round(hier.lone_share(), 3),
        }

    async def check(self, ctx: Context, namespace: str) -> list[str]:
        graph, _ = await asyncio.to_thread(
            graph_cache(ctx, self.name).get, namespace, self.params.hierarchy
        )
        return hierarchy_problems(graph, self.params.hierarchy.n, self.params.hierarchy.max_layers)

    def _base(self, ctx: Context, graph: Graph) -> Any:
        """The tier's base-graph builder, kept per namespace while its graph is loaded, so
        the llm tier's window of recent episodes carries over from one batch to the next."""
        key = f"{self.name}.base.{graph.namespace}"
        held = ctx.shared.get(key)
        if held is not None and held.graph is graph and held.tier == ctx.tier:
            return held
        if ctx.tier == "llm":
            from memstrata.designs.mnemis.base_graph_llm import LLMBaseGraph

            if ctx.llm is None:
                raise ConfigError(
                    "the llm tier needs an LLM; configure llm.kind or use --tier heuristic"
                )
            base: Any = LLMBaseGraph(graph, ctx.llm, self.params.base)
        else:
            base = HeuristicBaseGraph(graph, self.params.base)
        base.tier = ctx.tier
        ctx.shared[key] = base
        return base

    def _grouper(self, ctx: Context) -> Any:
        if ctx.tier != "llm" or ctx.llm is None:
            return None
        return category_grouper(ctx.llm, paper=self.params.prompts == "paper")


class MnemisPaperBuilder(MnemisBuilder):
    """The builder of ``mnemis-paper``: the same base graph and hierarchy code with the
    paper's values (:class:`MnemisPaperBuildParams`), its records apart from
    ``mnemis``'s, as a hierarchy built by other rules is another structure."""

    name = PAPER_BUILDER
    Params = MnemisPaperBuildParams


def unplaced(graph: Graph) -> bool:
    """Whether some entity sits in no layer-1 category (the hierarchy predates it)."""
    placed = {k for c in graph.layer(1) for k in c.child_ids}
    return any(e not in placed for e in graph.entities)
