"""Would a turn embedded with the turn before it be found more often? A ``bench qa`` run::

    python -m studies.turn_context {whole,last,question} bench qa FILE --format F \\
        --recipes default --no-answers --no-cache --out DIR

A reply ("For walking or running?") shares no words with what it answers about ("Just got
some new shoes, too!"). This study runs the ``memstrata`` command given after the variant
with System-1's dense list over the turns embedded with their context instead of alone:

* ``whole``: the previous turn of the same session, as the embedder reads a turn;
* ``last``: its last sentence only, with its speaker (the question a reply answers);
* ``question``: that last sentence only when it ends with "?" and another speaker said
  it; every other turn is embedded alone.

The context vectors are made in memory on the first search of a namespace (nothing is
stored); the speaker-filtered dense lists (a question read in a speaker's voice) and every
other route are left as they are. Figures: docs/benchmarks.md, "Two more ideas for the LoCoMo goal".
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from memstrata.cli.main import main as cli
from memstrata.models import Episode
from memstrata.retrieval import system1
from memstrata.retrieval.documents import embed_text
from memstrata.retrieval.text import sentences
from memstrata.store.base import ScoredKeys, SearchFilters, Store

VARIANTS = ("whole", "last", "question")


def _in_sessions(store: Store, namespace: str) -> list[Episode]:
    return sorted(store.all_episodes(namespace), key=lambda e: (e.session or "", e.seq, e.key))


def with_context(variant: str, episodes: list[Episode]) -> list[str]:
    """Each episode's embedder input with the context of ``variant`` before it."""
    texts = []
    for i, ep in enumerate(episodes):
        body = embed_text(ep.text, ep.speaker, ep.metadata)
        prev = episodes[i - 1] if i else None
        if prev is None or not ep.session or prev.session != ep.session:
            texts.append(body)
            continue
        spans = sentences(prev.text)
        last = prev.text[spans[-1][0] : spans[-1][1]] if spans else prev.text
        head = f"{prev.speaker}: " if prev.speaker else ""
        if variant == "whole":
            context = embed_text(prev.text, prev.speaker, prev.metadata)
        elif variant == "last" or (last.endswith("?") and prev.speaker != ep.speaker):
            context = head + last
        else:
            texts.append(body)
            continue
        texts.append(f"{context}\n{body}")
    return texts


class ContextStore:
    """The route's store, with unfiltered dense search over the context vectors."""

    def __init__(self, store: Store, vectors: tuple[np.ndarray, np.ndarray]) -> None:
        self._store, (self._keys, self._vecs) = store, vectors

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def dense_episodes(
        self,
        namespace: str,
        model: str,
        queries: np.ndarray,
        limit: int,
        filters: SearchFilters | None = None,
    ) -> list[ScoredKeys]:
        if filters is not None and filters.speakers:
            return self._store.dense_episodes(namespace, model, queries, limit, filters)
        return [self.top(q, limit) for q in queries]

    def top(self, q: np.ndarray, limit: int) -> ScoredKeys:
        """The ``limit`` best rows by cosine with ``q``."""
        sims = self._vecs @ q
        best = np.argsort(-sims, kind="stable")[:limit]
        return [(int(self._keys[i]), float(sims[i])) for i in best]


def install(variant: str) -> None:
    cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    search = system1.EpisodeRoute.search

    def patched(self: system1.EpisodeRoute, namespace: str, *args: Any, **kw: Any) -> Any:
        if namespace not in cache:
            episodes = _in_sessions(self.store, namespace)
            keys = np.array([e.key for e in episodes])
            cache[namespace] = (keys, self.embedder.embed(with_context(variant, episodes)))
        plain, self.store = self.store, ContextStore(self.store, cache[namespace])  # type: ignore[assignment]
        try:
            return search(self, namespace, *args, **kw)
        finally:
            self.store = plain

    system1.EpisodeRoute.search = patched  # type: ignore[method-assign]


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[1] not in VARIANTS:
        raise SystemExit(__doc__)
    install(sys.argv[1])
    sys.argv = ["memstrata", *sys.argv[2:]]
    cli()


if __name__ == "__main__":
    main()
