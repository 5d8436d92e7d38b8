"""Reciprocal rank fusion."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

RRF_K = 60


def rrf(
    rankings: Sequence[Sequence[K]], *, k: int = RRF_K, weights: Sequence[float] | None = None
) -> dict[K, float]:
    """Sum over rankings of ``weight / (k + rank)`` (rank from 1), as in Cormack et al. 2009."""
    scores: dict[K, float] = {}
    for i, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[i]
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
    return scores
