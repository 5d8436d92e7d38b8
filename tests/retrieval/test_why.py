"""Why a hit was found, on both stores: each hit of a search carries its routes' ranks,
its rank in each of System-1's candidate lists, the query terms it holds and the rules
that moved it (the question penalty, the reply rule, the speaker's boost and thread ...),
and a score in 0..1 that reads the same for every query, where the fused score (a
reciprocal rank) reads the same for every first hit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import pgtest
from memstrata import Memory
from memstrata.embed import MiniLMEmbedder
from memstrata.models import Hit
from memstrata.retrieval.relevance import search_terms
from memstrata.retrieval.system1 import DEFAULT_SYSTEM1, EpisodeRoute, plan_query
from memstrata.retrieval.text import stems

SUMMER = [  # session, id, speaker, text
    ("s1", "m1", "Maya", "I finally finished the thesis draft last night."),
    ("s1", "t1", "Theo", "Congratulations, that was a long road! What are your plans for the "
     "summer?"),
    ("s1", "m2", "Maya", "Volunteering at an animal rescue near the coast."),
    ("s1", "t2", "Theo", "That sounds lovely, they always need help."),
    ("s2", "m3", "Maya", "My sister keeps changing her summer wedding plans."),
    ("s2", "t3", "Theo", "Weddings bring drama every summer."),
    ("s3", "m4", "Maya", "Our plans at work changed, the launch moved to autumn."),
    ("s3", "t4", "Theo", "I planted tomatoes in the garden this spring."),
    ("s4", "m5", "Maya", "The summer heat makes my commute miserable."),
    ("s4", "t5", "Theo", "Do you have any plans to buy a fan?"),
    ("s4", "m6", "Maya", "No, I'll just open the windows."),
    ("s5", "t6", "Theo", "The summer festival plans were announced today."),
    ("s6", "c1", "Caro", "I went to a poetry reading last Friday, it was powerful."),
    ("s6", "l1", "Mel", "Nope, never been to something like that. What was it about?"),
    ("s6", "c2", "Caro", "People shared their stories through poems."),
    ("s6", "l2", "Mel", "Wow. How did it make you feel?"),
]  # fmt: skip
PLANS = "What are Maya's plans for the summer?"
POETRY = "How did Mel feel about the poetry reading?"
NOWHERE = "What is the boiling point of mercury?"


@pytest.fixture(params=["sqlite", "postgres"])
def memory(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: MiniLMEmbedder
) -> Iterator[Memory]:
    where = str(tmp_path / "why.db") if request.param == "sqlite" else pgtest.database_url(tmp_path)
    turns = [{"id": i, "text": t, "speaker": s, "session": ss} for ss, i, s, t in SUMMER]
    try:
        with Memory.open(where, embedder=embedder) as m:
            m.add_many(turns, namespace="w")
            yield m
    finally:
        if request.param == "postgres":
            pgtest.drop(tmp_path)


def search(memory: Memory, query: str, k: int = 10) -> list[Hit]:
    return memory.search(query, namespace="w", k=k, max_tokens=None).hits


def route(memory: Memory, query: str, k: int, **knobs: float) -> list[Hit]:
    """System-1 alone with ``knobs`` changed: the route records what moved its hits."""
    params = DEFAULT_SYSTEM1.model_copy(update=knobs)
    (hits,) = EpisodeRoute(memory.store, memory.embedder, params).search("w", [query], k)
    return hits


def moved(hit: Hit) -> dict[str, float]:
    assert hit.why is not None
    return {m.rule: m.effect for m in hit.why.moved}


def test_every_hit_says_how_it_was_found(memory: Memory) -> None:
    hits = search(memory, PLANS)
    terms = search_terms(PLANS)
    bm25_terms = plan_query(PLANS, memory.store.speakers("w"), DEFAULT_SYSTEM1).terms
    bm25 = memory.store.bm25_episodes("w", bm25_terms, DEFAULT_SYSTEM1.candidates)
    by_key = {e.id: key for key, e in memory.store.episodes_by_key([k for k, _ in bm25]).items()}
    bm25_rank = {eid: [k for k, _ in bm25].index(key) + 1 for eid, key in by_key.items()}
    for h in hits:
        why = h.why
        assert why is not None and h.ranks == {"system1": hits.index(h) + 1}
        assert 0.0 <= h.score <= 1.0 and why.fused > 0
        assert why.lists.get("bm25") == bm25_rank.get(h.id), h.id  # as the store ranks it
        assert "dense" in why.lists or why.lists  # a candidate of some list
        assert set(why.terms) <= set(terms)
        held = set(stems(h.text))
        assert all(stems(t)[0] in held for t in why.terms)
        assert why.similarity is not None and -1.0 <= why.similarity <= 1.0
    # the fused scores order the hits, as before
    fused = [h.why.fused for h in hits if h.why]
    assert fused == sorted(fused, reverse=True)
    summer = next(h for h in hits if h.id == "m5")
    assert summer.why is not None and "summer" in summer.why.terms


def test_the_rules_that_moved_a_hit_are_named(memory: Memory) -> None:
    plans = {h.id: h for h in search(memory, PLANS, k=16)}
    # the reply rule: Maya's answers to Theo's questions borrow from them (and only
    # replies do: c2 answers Mel's "What was it about?")
    replied = {i for i, h in plans.items() if moved(h).get("reply_weight", 0) > 0}
    assert {"m2", "m6"} <= replied <= {"m2", "m6", "c2"}
    # the named speaker's turns are raised, and only hers
    raised = {i for i, h in plans.items() if "speaker_boost" in moved(h)}
    assert raised == {i for i in plans if i.startswith("m")}
    assert all(moved(plans[i])["speaker_boost"] > 0 for i in raised)
    # the question penalty: the turns that ask lose, and only they
    poetry = {h.id: h for h in search(memory, POETRY, k=16)}
    asking = {i for i, h in poetry.items() if moved(h).get("question_penalty", 0) < 0}
    assert {"l1", "l2"} <= asking and not asking & {"c1", "c2", "m2", "m3"}
    # the speaker's thread: Mel's turns around the best hit borrow from it
    assert any(moved(h).get("thread_weight", 0) > 0 for h in poetry.values())
    # a rule turned off moves nothing
    off = route(memory, POETRY, 16, question_penalty=0.0, reply_weight=0.0)
    assert off and not any({"question_penalty", "reply_weight"} & moved(h).keys() for h in off)
    on = route(memory, POETRY, 16)
    assert any("question_penalty" in moved(h) for h in on)


def test_the_score_reads_the_same_across_queries(memory: Memory) -> None:
    """Both first hits have the same fused score (rank 1 of one route); the relevance of
    a hit that answers is far above that of the best hit for what memory does not hold."""
    (found, *_), (nothing, *_) = search(memory, PLANS), search(memory, NOWHERE)
    assert found.why is not None and nothing.why is not None
    assert found.why.fused == nothing.why.fused
    assert found.score > 0.3 > 0.05 > nothing.score  # a probability of being evidence
    assert found.why.similarity is not None and nothing.why.similarity is not None
    assert found.why.similarity > nothing.why.similarity and nothing.why.terms == []


def test_every_recipes_hits_are_explained(memory: Memory) -> None:
    for recipe in ("rag", "mnemis", "memtree", "personalai"):
        memory.build("w", recipe=recipe, tier="heuristic")
        for h in memory.search(PLANS, namespace="w", k=6, recipe=recipe, max_tokens=None).hits:
            assert h.why is not None and 0.0 <= h.score <= 1.0, (recipe, h)
            assert h.why.similarity is not None, (recipe, h.kind, h.id)
