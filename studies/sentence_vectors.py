"""Would a turn be found by the vector of its best sentence? A ``bench qa`` run::

    python -m studies.sentence_vectors {replace,list} WEIGHT bench qa FILE --format F \\
        --recipes default --no-answers --no-cache --out DIR

A turn of several sentences ("Yeah, Gina! It's been tough, but I'm living my true self.
Dancing makes me so happy ...") has one vector, the mean of all it says; a question about
one of its sentences ("What does Jon's dance make him?") is nearer that sentence than
the mean. Every sentence of a turn of two or more is embedded alone (with its speaker,
as the store embeds a turn), and a turn's sentence score is the best cosine among its
sentences and its own vector. Then, with the ``memstrata`` command given after the
variant:

* ``replace``: System-1's dense list ranks turns by that score instead of their vector
  (WEIGHT unused);
* ``list``: that ranking joins the fusion as a list of its own, weighted WEIGHT.

The sentence vectors are made in memory on a namespace's first search (nothing is
stored); the speaker-filtered dense lists and every other route are left as they are.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from memstrata.cli.main import main as cli
from memstrata.retrieval import system1
from memstrata.retrieval.documents import embed_text
from memstrata.retrieval.text import sentences
from memstrata.store.base import ScoredKeys, SearchFilters, Store
from studies import extra_lists
from studies.turn_context import ContextStore

VARIANTS = ("replace", "list")
CANDIDATES = 100


def sentence_rows(store: Store, namespace: str, embedder: Any) -> tuple[np.ndarray, np.ndarray]:
    """(episode key per row, vectors): each turn's own text, and each of its sentences
    when it has two or more."""
    keys: list[int] = []
    texts: list[str] = []
    for ep in store.all_episodes(namespace):
        keys.append(ep.key)
        texts.append(embed_text(ep.text, ep.speaker, ep.metadata))
        spans = sentences(ep.text)
        if len(spans) > 1:
            for start, end in spans:
                keys.append(ep.key)
                texts.append(embed_text(ep.text[start:end], ep.speaker, {}))
    return np.array(keys), embedder.embed(texts)


def best_by_turn(keys: np.ndarray, vecs: np.ndarray, q: np.ndarray, limit: int) -> ScoredKeys:
    sims = vecs @ q
    out: ScoredKeys = []
    seen: set[int] = set()
    for row in np.argsort(-sims, kind="stable"):
        key = int(keys[row])
        if key not in seen:
            seen.add(key)
            out.append((key, float(sims[row])))
            if len(out) == limit:
                break
    return out


class SentenceStore(ContextStore):
    """The route's store, with unfiltered dense search by each turn's best sentence."""

    def top(self, q: np.ndarray, limit: int) -> ScoredKeys:
        return best_by_turn(self._keys, self._vecs, q, limit)


def install(variant: str, weight: float) -> None:
    cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def rows(route: system1.EpisodeRoute, namespace: str) -> tuple[np.ndarray, np.ndarray]:
        if namespace not in cache:
            cache[namespace] = sentence_rows(route.store, namespace, route.embedder)
        return cache[namespace]

    if variant == "list":

        def make(
            route: system1.EpisodeRoute,
            namespace: str,
            queries: list[str],
            filters: SearchFilters | None,
        ) -> list[extra_lists.Lists]:
            if filters is not None and not filters.is_empty():
                return [[] for _ in queries]
            keys, vecs = rows(route, namespace)
            return [
                [([k for k, _ in best_by_turn(keys, vecs, q, CANDIDATES)], weight)]
                for q in route.embedder.embed(queries)
            ]

        extra_lists.install(make)
        return
    search = system1.EpisodeRoute.search

    def replaced(self: system1.EpisodeRoute, namespace: str, *args: Any, **kw: Any) -> Any:
        plain, self.store = self.store, SentenceStore(self.store, rows(self, namespace))  # type: ignore[assignment]
        try:
            return search(self, namespace, *args, **kw)
        finally:
            self.store = plain

    system1.EpisodeRoute.search = replaced  # type: ignore[method-assign]


def main() -> None:
    if len(sys.argv) < 4 or sys.argv[1] not in VARIANTS:
        raise SystemExit(__doc__)
    install(sys.argv[1], float(sys.argv[2]))
    sys.argv = ["memstrata", *sys.argv[3:]]
    cli()


if __name__ == "__main__":
    main()
