"""Fusion: the hits of several routes become one ranked, de-duplicated list of ``k`` hits.

Per kind, every route's ranking of that kind enters a weighted reciprocal rank fusion
(:func:`memstrata.retrieval.rank_fusion.rrf`); the kinds then share the ``k`` places by their
shares (:func:`cut`). A hit found by several routes keeps the text of
the best-ranked one and the union of their sources; ``Hit.ranks`` records which route
found it at what rank, ``Hit.score`` becomes the fused score. With one route, fusion
keeps that route's order exactly. The hits are the routes' own objects, updated in place
(a route returns new hits on every call), which keeps fusion cheap on the hot path.
"""

from __future__ import annotations

import heapq
from collections.abc import Awaitable, Callable, Sequence

from memstrata.engine.recipe import FusionSpec
from memstrata.models import Hit
from memstrata.retrieval.rank_fusion import rrf

# (query, kind, candidate texts) -> candidate indexes, best first
Reorder = Callable[[str, str, list[str]], Awaitable[list[int]]]


def fuse(
    per_route: Sequence[tuple[str, float, list[Hit]]],
    spec: FusionSpec,
    k: int,
) -> list[Hit]:
    """``per_route``: (route name, weight, hits best first) for one query."""
    return cut(merge(per_route, spec), spec, k)


def merge(per_route: Sequence[tuple[str, float, list[Hit]]], spec: FusionSpec) -> list[Hit]:
    """Every distinct hit once, each kind ordered by fused score; kinds not yet cut.
    With ``spec.order == "mixed"``, one ranking over all kinds instead."""
    if spec.order == "mixed":
        return _merge_group(per_route, spec, lambda _h: True)
    kinds: list[str] = list(spec.kind_order)
    for _, _, hits in per_route:
        for h in hits:
            if h.kind not in kinds:
                kinds.append(h.kind)
    out: list[Hit] = []
    for kind in kinds:
        out.extend(_merge_group(per_route, spec, _of_kind(kind)))
    return out


def _of_kind(kind: str) -> Callable[[Hit], bool]:
    return lambda h: h.kind == kind


def _merge_group(
    per_route: Sequence[tuple[str, float, list[Hit]]],
    spec: FusionSpec,
    member: Callable[[Hit], bool],
) -> list[Hit]:
    """RRF over the routes' rankings of the hits ``member`` admits, best first."""
    rankings: list[list[tuple[str, str]]] = []
    weights: list[float] = []
    merged: dict[tuple[str, str], Hit] = {}
    for route, weight, hits in per_route:
        ranking: list[tuple[str, str]] = []
        seen: set[tuple[str, str]] = set()
        for h in hits:
            key = (h.kind, h.id)
            if not member(h) or key in seen:
                continue
            seen.add(key)
            ranking.append(key)
            if key not in merged:
                merged[key] = h  # routes hand over fresh hits (see Route.search)
                h.ranks = {}
            else:
                _absorb(merged[key], h)
            merged[key].ranks[route] = len(ranking)
        rankings.append(ranking)
        weights.append(weight)
    if not merged:
        return []
    scores = rrf(rankings, k=spec.rrf_k, weights=weights)
    # Ties (including every item of a zero-weight route) keep first-seen order.
    out: list[Hit] = []
    for key in sorted(merged, key=lambda i: -scores[i]):
        hit = merged[key]
        hit.score = round(scores[key], 6)
        out.append(hit)
    return out


def cut(hits: list[Hit], spec: FusionSpec, k: int) -> list[Hit]:
    """At most ``k`` of ``hits`` (merged: each kind best first), kept in their order. The
    places go by rank, each kind in proportion to its share (:meth:`FusionSpec.share`):
    the hit at rank r of its kind stands at r / share, the lowest stand first (ties in
    kind order), so a kind short of hits leaves its places to the others."""
    if k <= 0:
        return []
    kinds = {kind: i for i, kind in enumerate(dict.fromkeys([*spec.kind_order, *_kinds(hits)]))}
    taken: dict[str, int] = {}
    standing: list[tuple[float, int, int]] = []
    for at, h in enumerate(hits):
        share = spec.share(h.kind)
        if share <= 0:
            continue
        taken[h.kind] = taken.get(h.kind, 0) + 1
        rank = at + 1 if spec.order == "mixed" else taken[h.kind]
        standing.append((rank / share, kinds[h.kind], at))
    if len(standing) <= k and len(standing) == len(hits):
        return hits
    kept = {at for _, _, at in heapq.nsmallest(k, standing)}
    return [h for at, h in enumerate(hits) if at in kept]


def _kinds(hits: list[Hit]) -> list[str]:
    return list(dict.fromkeys(h.kind for h in hits))


async def rerank(
    query: str, hits: list[Hit], spec: FusionSpec, k: int, reorder: Reorder
) -> list[Hit]:
    """Let ``reorder`` order each kind's window (its first ``2k``) before the cut."""
    out: list[Hit] = []
    for kind in _kinds(hits):
        group = [h for h in hits if h.kind == kind]
        window = group[: 2 * k]
        if len(window) > 1:
            order = await reorder(query, kind, [h.text for h in window])
            picked = [window[i] for i in dict.fromkeys(order) if 0 <= i < len(window)]
            seen = {id(h) for h in picked}
            window = picked + [h for h in window if id(h) not in seen]
        out.extend(window)
    return out


def _absorb(into: Hit, other: Hit) -> None:
    into.sources = list(dict.fromkeys(into.sources + other.sources))
    into.spans = list(dict.fromkeys(into.spans + other.spans))
    into.routes = sorted(set(into.routes) | set(other.routes))
