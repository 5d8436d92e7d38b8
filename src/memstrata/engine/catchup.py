"""Episodes a recipe has not folded in yet stay findable.

A design's route reads its own structures, so an episode its builder has not taken yet
(queued behind a worker, or failed: the LLM was down, its reply unusable) is invisible
to it. The engine closes that gap for every recipe whose routes do not rank raw episodes
themselves (:attr:`Route.surfaces_unbuilt`): System-1 searches the episodes, and those
of its hits that some builder of the recipe has not marked done join the fusion as one
more route, ``unbuilt``. Once every episode is built that route is empty, so a built
namespace ranks exactly as the design does alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.embed.base import Embedder
from memstrata.models import Hit
from memstrata.retrieval.system1 import EpisodeRoute, System1Params
from memstrata.store.base import SearchFilters, Store

#: the route label of these hits in fusion and in each hit's ``routes``
LABEL = "unbuilt"


def unbuilt_hits(
    store: Store,
    embedder: Embedder,
    namespace: str,
    queries: list[str],
    k: int,
    builders: Sequence[str],
    filters: SearchFilters | None = None,
    params: System1Params | None = None,
) -> list[list[Hit]]:
    """Per query, System-1's best ``k`` episodes that a builder has not folded in."""
    found = EpisodeRoute(store, embedder, params).search(namespace, queries, k, filters)
    ids = sorted({h.id for hits in found for h in hits})
    waiting = set(store.unbuilt(namespace, builders, ids)) if ids else set()
    out = []
    for hits in found:
        kept = [h for h in hits if h.id in waiting]
        for h in kept:
            h.routes = [*h.routes, LABEL]
        out.append(kept)
    return out
