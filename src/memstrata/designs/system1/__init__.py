"""System-1 as a design: the ``system1`` route over episodes, the ``records`` route over
derived records of any kind (:mod:`.records`), and the flat recipes.

* ``rag``: the flat baseline, dense + BM25 over episodes, plain RRF.
* ``default``: System-1 with speaker matching, session context and date handling
  (:mod:`memstrata.retrieval.system1`); builds nothing.

The route itself is a core primitive that other designs reuse; this package only makes
it selectable by name.
"""

from __future__ import annotations

from memstrata.designs.system1.records import RecordsRoute
from memstrata.engine.contracts import BlockingRoute, Context, Design
from memstrata.engine.recipe import Recipe, RouteSpec
from memstrata.models import Hit
from memstrata.retrieval.system1 import DEFAULT_SYSTEM1, EpisodeRoute, System1Params
from memstrata.store.base import SearchFilters


class System1Route(BlockingRoute[System1Params]):
    """Dense + BM25 over episodes, fused by RRF, with the refinements of its params."""

    name = "system1"
    surfaces_unbuilt = True  # System-1 ranks every stored episode
    Params = System1Params

    def search_now(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None,
    ) -> list[list[Hit]]:
        route = EpisodeRoute(ctx.store, ctx.embedder, self.params)
        return route.search(namespace, queries, k, filters)


RECIPES = [
    Recipe(
        name="rag",
        description="Flat baseline: dense + BM25 over episodes, plain RRF.",
        routes=[RouteSpec(name="system1")],
    ),
    Recipe(
        name="default",
        description="System-1 over episodes: speaker, session, date, like and link refinements.",
        routes=[RouteSpec(name="system1", params=DEFAULT_SYSTEM1.model_dump())],
    ),
]

design = Design(
    name="system1",
    routes=[System1Route, RecordsRoute],
    recipes=RECIPES,
    description="Hybrid episode retrieval, the flat baselines.",
)
