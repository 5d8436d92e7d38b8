"""A search's hits explained and scored (:mod:`memstrata.retrieval.relevance`), without
embedding the query a second time.

The routes embed the queries themselves. The engine's embedder notes, for the length of
one search (:func:`noting`), the vectors it computed, and the explanation reads the
queries' vectors from that note. Noting changes nothing a route gets: every call is
computed as before (a vector read back from a batch could differ in its last bits from
one computed alone, and the rankings must not move).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any

import numpy as np

from memstrata.embed.base import Embedder, Vectors
from memstrata.models import Hit
from memstrata.retrieval import relevance
from memstrata.store.base import Store

_NOTED: ContextVar[dict[str, np.ndarray] | None] = ContextVar("memstrata_noted", default=None)


class Noting:
    """An embedder that, inside :func:`noting`, keeps the first vector it computed for
    each text; outside it, the embedder it wraps as it is."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id  # known up front, even by a lazy embedder
        self.dim = inner.dim

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed(self, texts: list[str]) -> Vectors:
        vecs = self.inner.embed(texts)
        noted = _NOTED.get()
        if noted is not None:
            for text, vec in zip(texts, vecs, strict=True):
                noted.setdefault(text, vec)
        return vecs


@contextlib.contextmanager
def noting() -> Iterator[dict[str, np.ndarray]]:
    """Note the vectors embedded in this context (threads started from it included)."""
    noted: dict[str, np.ndarray] = {}
    token = _NOTED.set(noted)
    try:
        yield noted
    finally:
        _NOTED.reset(token)


def reads(
    queries: Sequence[str], results: Sequence[Sequence[Hit]], noted: dict[str, np.ndarray]
) -> bool:
    """Whether :func:`explain` will read the store or embed (else it is quick enough to
    run on the event loop: the hop to a thread would cost more than it)."""
    return any(q not in noted for q in queries) or any(relevance.lacking(r) for r in results)


def explain(
    store: Store,
    embedder: Embedder,
    namespace: str,
    queries: Sequence[str],
    results: Sequence[Sequence[Hit]],
    noted: dict[str, np.ndarray],
) -> None:
    """Each result's hits explained and scored, in place; a query no route embedded is
    embedded here."""
    missing = [q for q in dict.fromkeys(queries) if q not in noted]
    if missing:
        noted.update(zip(missing, embedder.embed(missing), strict=True))
    for query, hits in zip(queries, results, strict=True):
        relevance.explain(store, embedder, namespace, query, noted[query], hits)
