"""Run a ``memstrata`` command with more ranked lists in System-1's fusion.

A study that asks "would this ranking help as one more list?" gives :func:`install` a
function from (route, namespace, queries, filters) to, per query, the lists to add
(episode keys, best first) and their weights. The lists' turns join the candidates (their
meta is read with the rest), so a turn only they find can reach the first ten; every
refinement after the fusion applies to it as to the others.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from memstrata.retrieval import system1
from memstrata.store.base import SearchFilters, Store

_SEARCH = system1.EpisodeRoute.search.__code__
Lists = list[tuple[list[int], float]]
MakeLists = Callable[[system1.EpisodeRoute, str, list[str], SearchFilters | None], list[Lists]]


class _WithExtra:
    """The route's store; the current query's extra keys join the candidates' meta read
    (the one System-1's search makes after its lists, before the fusion)."""

    def __init__(self, store: Store, keys: Callable[[], list[int]]) -> None:
        self._store, self._keys = store, keys

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def episode_meta(self, keys: list[int]) -> Any:
        if sys._getframe(1).f_code is not _SEARCH:  # a read of the refinements
            return self._store.episode_meta(keys)
        return self._store.episode_meta(list(dict.fromkeys([*keys, *self._keys()])))


def install(make: MakeLists) -> None:
    search = system1.EpisodeRoute.search
    rrf = system1.rrf
    state = threading.local()

    def current() -> list[int]:
        lists = getattr(state, "lists", None)
        if not lists or state.i >= len(lists):
            return []
        return [k for keys, _ in lists[state.i] for k in keys]

    def searched(
        self: system1.EpisodeRoute, namespace: str, queries: list[str], *args: Any, **kw: Any
    ) -> Any:
        filters = kw.get("filters") or (args[1] if len(args) > 1 else None)
        state.lists, state.i = make(self, namespace, queries, filters), 0
        plain, self.store = self.store, _WithExtra(self.store, current)  # type: ignore[assignment]
        try:
            return search(self, namespace, queries, *args, **kw)
        finally:
            self.store, state.lists = plain, None

    def fused(lists: list[list[int]], k: int, weights: list[float]) -> dict[int, float]:
        more = getattr(state, "lists", None)
        if more is not None:
            lists = [*lists, *(keys for keys, _ in more[state.i])]
            weights = [*weights, *(w for _, w in more[state.i])]
            state.i += 1
        return rrf(lists, k=k, weights=weights)

    system1.EpisodeRoute.search = searched  # type: ignore[method-assign]
    system1.rrf = fused  # type: ignore[assignment]


def weighted_bench(doc: str, install_with: Callable[[float], None]) -> None:
    """The command line of a study that patches System-1 with one weight: ``python -m
    studies.NAME WEIGHT bench qa ...`` installs the patch, then runs the ``memstrata``
    command after the weight."""
    from memstrata.cli.main import main as cli

    if len(sys.argv) < 3:
        raise SystemExit(doc)
    install_with(float(sys.argv[1]))
    sys.argv = ["memstrata", *sys.argv[2:]]
    cli()
