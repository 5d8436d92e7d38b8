"""What a *learned* stand-in reranker could make of the Mnemis episode union.

The ceiling benchmark (:mod:`studies.mnemis_system2.ceiling`) bounds System-2 with a
perfect reranker. This module gives the realistic bound for a reranker built from the
signals the library has offline: for every member of a query's episode union it computes

* its rank in each of the six rankings the union is fused from (System-1's, the
  episodes behind the best facts, System-2's by support, each top entity's best episode,
  the union read in context and in its session), as ``20 / (20 + rank)``, 0 where
  absent; whether System-2 reached it; whether System-1 missed it;
* its MiniLM cosine to the query (speaker-free text), raw and as a z-score within the
  union; its BM25 score over the best one of the union;
* the best cosine of its neighbouring turns in the same session, and that minus its own
  (a turn that answers "what did you do?" is found through the question before it);

and fits a logistic regression on labelled queries of *other* conversations
(leave-one-group-out), so every ranking it reports is of questions it never saw. No
feature names a data set; the weights are never shipped, only measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memstrata.designs.mnemis.builder import plain_text
from memstrata.designs.mnemis.route import EpisodeUnion
from memstrata.embed.base import Embedder
from memstrata.embed.cache import embed_cached
from memstrata.store.base import Store

FEATURES = (
    "system1",
    "facts",
    "system2",
    "entities",
    "context",
    "session",
    "in_system2",
    "not_in_system1",
    "cosine",
    "cosine_z",
    "bm25",
    "neighbour_cosine",
    "neighbour_gain",
)
_RANK_K = 20


@dataclass
class EpisodeSpace:
    """One namespace's episodes: their vectors, BM25 keys and same-session neighbours."""

    ids: list[str]
    pos: dict[str, int]
    id_of_key: dict[int, str]
    vecs: NDArray[np.float32]
    neighbours: list[list[int]]

    @classmethod
    def load(cls, store: Store, embedder: Embedder, namespace: str) -> EpisodeSpace:
        episodes = []
        after = 0
        while batch := store.iter_episodes(namespace, after, 2000):
            episodes.extend(batch)
            after = batch[-1].key
        ids = [e.id for e in episodes]
        pos = {eid: i for i, eid in enumerate(ids)}
        # the same neighbours the route reads a turn with
        at = {e.key: i for i, e in enumerate(episodes)}
        near = store.session_neighbours(list(at), 1)
        neighbours = [[at[n] for n in near.get(e.key, []) if n in at] for e in episodes]
        vecs = embed_cached(store, embedder, [plain_text(e) for e in episodes])
        return cls(ids, pos, {e.key: e.id for e in episodes}, vecs, neighbours)


def features(
    union: EpisodeUnion, qvec: NDArray[np.float32], space: EpisodeSpace, bm25: dict[str, float]
) -> tuple[list[str], NDArray[np.float64]]:
    """The union's members (first appearance order) and one row of :data:`FEATURES` each."""
    lists = union.rankings()
    cands = [c for c in dict.fromkeys(x for lst in lists for x in lst) if c in space.pos]
    if not cands:
        return [], np.zeros((0, len(FEATURES)))
    rows = [space.pos[c] for c in cands]
    all_cos = space.vecs @ qvec
    cos = all_cos[rows].astype(np.float64)
    near = np.array(
        [max((all_cos[n] for n in space.neighbours[r]), default=all_cos[r]) for r in rows],
        dtype=np.float64,
    )
    bm = np.array([bm25.get(c, 0.0) for c in cands])
    ranks = []
    for lst in lists:
        rank = {x: i for i, x in enumerate(lst)}
        ranks.append([_RANK_K / (_RANK_K + rank[c] + 1) if c in rank else 0.0 for c in cands])
    s2, s1 = set(union.system2), set(union.system1)
    X = np.column_stack(
        [
            *ranks,
            [float(c in s2) for c in cands],
            [float(c not in s1) for c in cands],
            cos,
            (cos - cos.mean()) / (cos.std() + 1e-6),
            bm / max(bm.max(), 1e-9),
            near,
            near - cos,
        ]
    )
    return cands, X


class LogisticRanker:
    """Pointwise logistic regression on standardised features, L2-regularised, fitted by
    full-batch gradient descent (deterministic; a few thousand rows fit in a second)."""

    def __init__(self, l2: float = 1.0, steps: int = 3000, rate: float = 0.1) -> None:
        self.l2, self.steps, self.rate = l2, steps, rate
        self.mean: NDArray[np.float64] | None = None
        self.scale: NDArray[np.float64] | None = None
        self.weights: NDArray[np.float64] | None = None

    def _design(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        assert self.mean is not None and self.scale is not None
        return np.column_stack([(X - self.mean) / self.scale, np.ones(len(X))])

    def fit(self, X: NDArray[np.float64], y: NDArray[np.float64]) -> LogisticRanker:
        if len(X) == 0 or y.min() == y.max():
            raise ValueError("the training set needs both relevant and other episodes")
        self.mean, self.scale = X.mean(0), X.std(0) + 1e-9
        Z = self._design(X)
        w = np.zeros(Z.shape[1])
        for _ in range(self.steps):
            p = 1.0 / (1.0 + np.exp(-(Z @ w)))
            grad = Z.T @ (p - y) / len(y) + self.l2 * np.r_[w[:-1], 0.0] / len(y)
            w -= self.rate * grad
        self.weights = w
        return self

    def score(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        assert self.weights is not None, "fit first"
        return self._design(X) @ self.weights


@dataclass
class Example:
    """One labelled query: its group (conversation), union members, features, evidence."""

    group: str
    cands: list[str]
    X: NDArray[np.float64]
    gold: set[str]


def leave_one_group_out(examples: Sequence[Example]) -> list[list[str]] | None:
    """Each example's union ranked by a ranker fitted on the other groups' examples only;
    None when there are fewer than two groups or a training set has no evidence in it."""
    groups = sorted({e.group for e in examples})
    if len(groups) < 2:
        return None
    out: list[list[str] | None] = [None] * len(examples)
    for held in groups:
        train = [e for e in examples if e.group != held and e.cands]
        if not train:
            return None
        X = np.vstack([e.X for e in train])
        y = np.array([float(c in e.gold) for e in train for c in e.cands])
        try:
            ranker = LogisticRanker().fit(X, y)
        except ValueError:
            return None
        for i, e in enumerate(examples):
            if e.group == held:
                order = np.argsort(-ranker.score(e.X), kind="stable") if e.cands else ()
                out[i] = [e.cands[int(j)] for j in order]
    return [o or [] for o in out]
