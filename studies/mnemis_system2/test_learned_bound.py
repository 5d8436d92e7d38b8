"""The learned-reranker bound: its features, its ranker and leave-one-group-out fitting."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memstrata.designs.mnemis.route import EpisodeUnion
from memstrata.memory import Memory
from studies.mnemis_system2.learned_bound import (
    FEATURES,
    EpisodeSpace,
    Example,
    LogisticRanker,
    features,
    leave_one_group_out,
)


def _space(tmp_path: Path, embedder) -> EpisodeSpace:
    """Two sessions: in s1 a question about the trip, then a bare "Yes, loved it!"; s2
    opens with an unrelated turn that follows s1's last one in the store."""
    with Memory.open(tmp_path / "m.db", embedder=embedder) as memory:
        turns = [
            ("q", "Did you enjoy the hiking trip to the mountains last weekend?", "s1"),
            ("a", "Yes, loved it!", "s1"),
            ("x", "The quarterly tax forms are due on Friday.", "s2"),
        ]
        for eid, text, session in turns:
            memory.add(text, namespace="t", id=eid, session=session)
        return EpisodeSpace.load(memory.store, embedder, "t")


def test_a_turn_is_scored_through_its_neighbour_in_the_same_session_only(
    tmp_path: Path, embedder
) -> None:
    space = _space(tmp_path, embedder)
    assert space.neighbours[space.pos["q"]] == [space.pos["a"]]
    assert space.neighbours[space.pos["x"]] == []  # next in the store, another session
    qvec = embedder.embed(["How was the hiking trip in the mountains?"])[0]
    union = EpisodeUnion("trip", system1=["x", "a"], facts=[], system2=["a"], entities=[])
    cands, X = features(union, qvec, space, {"a": 2.0})
    assert cands == ["x", "a"] and X.shape == (2, len(FEATURES))
    row = {c: dict(zip(FEATURES, X[i], strict=True)) for i, c in enumerate(cands)}
    # "Yes, loved it!" says little itself; the question before it carries the topic.
    assert row["a"]["neighbour_cosine"] > row["a"]["cosine"] + 0.2
    assert row["a"]["neighbour_gain"] > 0.2
    assert row["x"]["neighbour_gain"] == 0.0  # no neighbour: its own cosine
    assert row["a"]["in_system2"] == 1.0 and row["x"]["in_system2"] == 0.0
    assert row["x"]["system1"] > row["a"]["system1"] > 0.0
    assert row["a"]["bm25"] == 1.0 and row["x"]["bm25"] == 0.0


def test_an_empty_union_has_no_rows(tmp_path: Path, embedder) -> None:
    space = _space(tmp_path, embedder)
    union = EpisodeUnion("q", [], [], [], ["not-an-episode"])
    cands, X = features(union, embedder.embed(["q"])[0], space, {})
    assert cands == [] and X.shape == (0, len(FEATURES))


def _examples(group: str, n: int, sign: float, rng: np.random.Generator) -> list[Example]:
    """Queries of 8 candidates; the relevant one has the highest (sign > 0) or lowest
    (sign < 0) first feature, the other features are noise."""
    out = []
    for q in range(n):
        X = rng.normal(size=(8, len(FEATURES)))
        best = int(np.argmax(sign * X[:, 0]))
        cands = [f"{group}{q}-{i}" for i in range(8)]
        out.append(Example(group, cands, X, {cands[best]}))
    return out


def test_the_ranker_learns_which_feature_marks_relevance() -> None:
    rng = np.random.default_rng(0)
    train = _examples("a", 60, 1.0, rng)
    X = np.vstack([e.X for e in train])
    y = np.array([float(c in e.gold) for e in train for c in e.cands])
    ranker = LogisticRanker().fit(X, y)
    test = _examples("b", 40, 1.0, rng)
    top1 = [e.cands[int(np.argmax(ranker.score(e.X)))] in e.gold for e in test]
    assert sum(top1) >= 30  # chance is 5 of 40


def test_a_held_out_group_is_never_trained_on() -> None:
    rng = np.random.default_rng(1)
    # Groups a and b mark relevance by a high first feature, group c by a low one: ranked
    # by a model fitted on a and b only, c's evidence comes last, as it must.
    examples = (
        _examples("a", 40, 1.0, rng) + _examples("b", 40, 1.0, rng) + _examples("c", 40, -1.0, rng)
    )
    rankings = leave_one_group_out(examples)
    assert rankings is not None
    for e, ranking in zip(examples, rankings, strict=True):
        assert sorted(ranking) == sorted(e.cands)
    held_c = [r[0] in e.gold for e, r in zip(examples, rankings, strict=True) if e.group == "c"]
    assert sum(held_c) <= 2  # 5 of 40 by chance; a model that had seen c would rank it first


def test_one_group_gives_no_bound_and_no_evidence_is_an_error() -> None:
    rng = np.random.default_rng(2)
    assert leave_one_group_out(_examples("a", 5, 1.0, rng)) is None
    with pytest.raises(ValueError, match="both relevant and other"):
        LogisticRanker().fit(np.ones((3, 2)), np.zeros(3))
