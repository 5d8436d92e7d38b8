"""Adaptive evidence sets: as many source turns as a question's evidence needs, for any
recipe, without an LLM.

A recipe's fused ranking says which turns come first, not how many of them matter: its
scores are reciprocal ranks, the same for every question. So the cut reads a score of
its own for each source turn of the first ``k`` hits: the cosine of the turn to the
query plus the IDF-weighted share of the query's terms the turn holds (terms compared
by stem; IDF over those candidate turns, so a term every candidate holds separates none
of them, and a query term none holds is left out). Turns scoring at least ``keep`` times
the best one stay, with the hits that rest on them, in the recipe's order. HiGMem's
heuristic filter is the same idea on its own score; this one needs nothing a design
built, only the stored turns and their cached vectors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from memstrata.embed.base import Embedder
from memstrata.embed.cache import embed_cached
from memstrata.models import Hit
from memstrata.retrieval import documents
from memstrata.retrieval.text import content_terms, overlap, stem, stems
from memstrata.store.base import Store


def source_order(hits: Sequence[Hit], k: int) -> list[str]:
    """The first ``k`` distinct source turns of ``hits``, in hit order."""
    out: dict[str, None] = {}
    for h in hits:
        for s in h.sources:
            if len(out) >= k:
                return list(out)
            out.setdefault(s, None)
    return list(out)


def term_share(query: str, texts: Sequence[str]) -> list[float]:
    """For each text, the IDF-weighted share of the query's stemmed content terms it
    holds, IDF taken over ``texts`` themselves."""
    terms = list(dict.fromkeys(stem(t) for t in content_terms(query)))
    held = [set(stems(t)) for t in texts]
    idf: dict[str, float] = {}
    for t in terms:
        df = sum(t in h for h in held)
        if df:
            idf[t] = math.log(1 + len(texts) / df)
    return [overlap(terms, text, lambda t: idf.get(t, 0.0)) for text in texts]


def source_scores(
    store: Store, embedder: Embedder, namespace: str, query: str, qvec: np.ndarray, ids: list[str]
) -> dict[str, float]:
    """The cut's score of each source turn ``ids`` (turns no longer stored are left out)."""
    eps = store.get_episodes(namespace, ids)
    if not eps:
        return {}
    texts = [documents.embed_text(e.text, e.speaker, e.metadata) for e in eps]
    vecs = np.asarray(embed_cached(store, embedder, texts), dtype=np.float32)
    cos = vecs @ np.asarray(qvec, dtype=np.float32)
    share = term_share(query, [e.text for e in eps])
    return {e.id: float(c) + s for e, c, s in zip(eps, cos, share, strict=True)}


def cut(hits: list[Hit], scores: dict[str, float], keep: float, k: int) -> list[Hit]:
    """The hits, in order, whose every source turn is kept, up to ``k`` distinct sources:
    the set's turns are the kept ones, so its size is what the evidence needed. The best
    turn is always kept: an episode hit on it always stays."""
    if not scores:
        return []
    best = max(scores.values())
    if keep <= 0 or best <= 0:  # keep 0 is the fixed k; no positive score, no ratio
        kept = set(scores)
    else:
        kept = {s for s, v in scores.items() if v >= keep * best}
    out: list[Hit] = []
    seen: set[str] = set()
    for h in hits:
        if not h.sources or not set(h.sources) <= kept:
            continue
        fresh = set(h.sources) - seen
        if len(seen) + len(fresh) > k:
            continue
        seen.update(fresh)
        out.append(h)
    return out
