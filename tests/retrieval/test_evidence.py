"""Adaptive evidence sets (retrieval/evidence.py): the cut on a real store (SQLite +
MiniLM) and its rules on hand-made hits."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata.embed import MiniLMEmbedder
from memstrata.memory import Memory
from memstrata.models import Hit
from memstrata.retrieval import evidence

TURNS = [
    {"id": "p1", "speaker": "Ana", "text": "My sister Lucia adopted a grey parrot called Pico."},
    {"id": "p2", "speaker": "Ana", "text": "Pico the parrot learned to whistle the kettle tune."},
    {"id": "x1", "speaker": "Ben", "text": "The train to Leeds was late again this morning."},
    {"id": "x2", "speaker": "Ben", "text": "I repainted the kitchen a pale yellow."},
    {"id": "x3", "speaker": "Ana", "text": "Our office moved to the fourth floor."},
    {"id": "x4", "speaker": "Ben", "text": "I bought new running shoes for the marathon."},
    {"id": "x5", "speaker": "Ana", "text": "The library closes early on Fridays now."},
    {"id": "x6", "speaker": "Ben", "text": "My laptop battery barely lasts two hours."},
]


@pytest.fixture
def memory(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[Memory]:
    with Memory.open(tmp_path / "e.db", embedder=embedder) as m:
        m.add_many(TURNS, namespace="n")
        yield m


def test_an_adaptive_search_keeps_the_turns_the_question_is_about(memory: Memory) -> None:
    question = "What do we know about Pico the parrot?"
    fixed = memory.search(question, namespace="n", k=8, max_tokens=None)
    cut = memory.search(question, namespace="n", k=8, max_tokens=None, adaptive=True)
    fixed_ids = [h.id for h in fixed.hits]
    cut_ids = [h.id for h in cut.hits]
    assert len(fixed_ids) == 8
    assert set(cut_ids[:2]) == {"p1", "p2"}
    assert not set(cut_ids) & {"x1", "x2", "x4", "x6"}
    # the cut keeps the recipe's order: its hits are the fixed list's, in the same order
    assert cut_ids == [i for i in fixed_ids if i in cut_ids]


def test_a_stricter_keep_never_keeps_more(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    sizes = []
    for keep in (0.0, 0.5, 0.9):
        path = tmp_path / f"k{keep}.db"
        with Memory.open(path, embedder=embedder, **{"budgets.evidence_keep": keep}) as m:
            m.add_many(TURNS, namespace="n")
            hits = m.search("Pico whistles", namespace="n", k=8, adaptive=True).hits
            sizes.append(len(hits))
    assert sizes[0] == 8  # keep 0: every turn of the first k
    assert sizes[0] >= sizes[1] >= sizes[2] >= 1


def hit(kind: str, id: str, *sources: str) -> Hit:
    return Hit(kind=kind, id=id, text=id, score=0.0, sources=list(sources))


def test_a_hit_stays_only_when_every_turn_it_rests_on_is_kept() -> None:
    hits = [hit("episode", "a", "a"), hit("fact", "f", "a", "b"), hit("episode", "c", "c")]
    scores = {"a": 1.0, "b": 0.2, "c": 0.8}
    assert [h.id for h in evidence.cut(hits, scores, 0.5, 10)] == ["a", "c"]
    assert [h.id for h in evidence.cut(hits, scores, 0.1, 10)] == ["a", "f", "c"]
    # k counts distinct turns: the fact would bring a third
    assert [h.id for h in evidence.cut(hits, scores, 0.1, 2)] == ["a", "f"]
    assert evidence.cut(hits, {}, 0.5, 10) == []


def test_a_query_term_every_candidate_holds_separates_none() -> None:
    texts = ["parrot and kettle", "parrot alone", "nothing here"]
    shares = evidence.term_share("parrot kettle", texts)
    assert shares[0] == pytest.approx(1.0)
    assert shares[0] > shares[1] > shares[2] == 0.0
    # "parrot" in two of three texts weighs less than the rarer "kettle"
    assert shares[1] < 0.5
    assert evidence.term_share("zebra", texts) == [0.0, 0.0, 0.0]
