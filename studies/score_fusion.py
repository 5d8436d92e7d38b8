"""Would the fusion gain from how far apart the candidates' scores are, not only their ranks?

    python -m studies.score_fusion WEIGHT bench qa FILE --format F \\
        --recipes default --no-answers --no-cache --out DIR

Reciprocal rank fusion reads ranks only: a turn whose cosine is far above the second's
gets the same share as one a hair above it. Here each of System-1's lists (the dense and
BM25 lists of the question, the dense lists of its readings in a speaker's voice) also
adds its candidates' scores, scaled to [0, 1] over that list (the best 1, the worst 0),
times WEIGHT / (k + 1), so that WEIGHT = 1 lets a list's best score weigh what its first
rank does. Every refinement after the fusion is left as it is.
"""

from __future__ import annotations

import threading
from typing import Any

from memstrata.retrieval import system1
from memstrata.store.base import Store
from studies import extra_lists


class _Recording:
    """The route's store, keeping the scores of the lists it returns."""

    def __init__(self, store: Store, seen: dict[tuple[int, ...], list[float]]) -> None:
        self._store, self._seen = store, seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def dense_episodes(self, *args: Any, **kw: Any) -> Any:
        out = self._store.dense_episodes(*args, **kw)
        for hits in out:
            self._keep(hits)
        return out

    def bm25_episodes(self, *args: Any, **kw: Any) -> Any:
        return self._keep(self._store.bm25_episodes(*args, **kw))

    def _keep(self, hits: list[tuple[int, float]]) -> list[tuple[int, float]]:
        self._seen[tuple(k for k, _ in hits)] = [s for _, s in hits]
        return hits


def install(weight: float) -> None:
    search = system1.EpisodeRoute.search
    rrf = system1.rrf
    state = threading.local()

    def searched(self: system1.EpisodeRoute, namespace: str, *args: Any, **kw: Any) -> Any:
        state.seen = {}
        plain, self.store = self.store, _Recording(self.store, state.seen)  # type: ignore[assignment]
        try:
            return search(self, namespace, *args, **kw)
        finally:
            self.store = plain

    def fused(lists: list[list[int]], k: int, weights: list[float]) -> dict[int, float]:
        scores = rrf(lists, k=k, weights=weights)
        for keys, w in zip(lists, weights, strict=True):
            got = state.seen.get(tuple(keys))
            if not got or len(got) < 2:
                continue
            top, low = max(got), min(got)
            if top <= low:
                continue
            for key, s in zip(keys, got, strict=True):
                scores[key] += weight * w * (s - low) / (top - low) / (k + 1)
        return scores

    system1.EpisodeRoute.search = searched  # type: ignore[method-assign]
    system1.rrf = fused  # type: ignore[assignment]


def main() -> None:
    extra_lists.weighted_bench(__doc__ or "", install)


if __name__ == "__main__":
    main()
