"""Dense + BM25 search over a namespace's derived records (entities, facts), in memory.

Records number in the thousands per namespace, far fewer than episodes, so an exact
in-memory index built from the loaded graph is small and quick; it is rebuilt when the
graph changes. BM25 uses the same word rules as the episode index (stopwords off,
possessives folded), with the usual k1 = 1.2, b = 0.75.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np
from numpy.typing import NDArray

from memstrata.retrieval.text import content_terms

K1 = 1.2
B = 0.75


class RecordIndex:
    """Ids with a BM25 text and a unit vector each; ``search`` returns ranked ids."""

    def __init__(self, ids: list[str], texts: list[str], vectors: NDArray[np.float32]) -> None:
        self.ids = ids
        self.vectors = vectors
        self._postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        lengths = []
        for i, text in enumerate(texts):
            terms = content_terms(text)
            counts = Counter(t for t in terms)
            lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self._postings[term].append((i, tf))
        self._len = np.array(lengths or [0], dtype=np.float32)
        self._avg = float(self._len.mean()) if lengths else 1.0

    def __len__(self) -> int:
        return len(self.ids)

    def bm25(self, terms: list[str], limit: int) -> list[tuple[str, float]]:
        if not self.ids:
            return []
        scores = np.zeros(len(self.ids), dtype=np.float32)
        n = len(self.ids)
        for term in terms:
            post = self._postings.get(term)
            if not post:
                continue
            idf = math.log(1 + (n - len(post) + 0.5) / (len(post) + 0.5))
            for i, tf in post:
                norm = K1 * (1 - B + B * self._len[i] / max(self._avg, 1e-6))
                scores[i] += idf * tf * (K1 + 1) / (tf + norm)
        hit = np.nonzero(scores)[0]
        order = hit[np.argsort(-scores[hit])][:limit]
        return [(self.ids[i], float(scores[i])) for i in order]

    def dense(self, query: NDArray[np.float32], limit: int) -> list[tuple[str, float]]:
        if not self.ids:
            return []
        sims = self.vectors @ query
        order = np.argsort(-sims)[:limit]
        return [(self.ids[i], float(sims[i])) for i in order]

    def cosine(self, query: NDArray[np.float32]) -> dict[str, float]:
        if not self.ids:
            return {}
        return dict(zip(self.ids, (self.vectors @ query).tolist(), strict=True))
