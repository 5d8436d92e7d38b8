"""Search and answers that know the present, on every recipe, as the issue tried them: a
chat in which Jonas moves from Bristol to Cardiff and gives up the cello.

"Where does Jonas live now?" ranks the turn stating Cardiff above the one stating
Bristol; "Where did Jonas live before?" the Bristol turn above the Cardiff one; "When
did Jonas move to Cardiff?" finds the change. The extract (``ask`` without an LLM)
answers with the value asked for first and quotes what it replaced. Built designs and
the bare turns (``default``, ``rag``) alike; ``store_at`` runs it on SQLite and on
PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memstrata.embed.base import Embedder
from memstrata.memory import Memory

CHAT = [  # id, speaker, text, time
    ("j1", "Jonas", "I live in Bristol now, near the harbour.", "2023-03-10T18:00"),
    ("m1", "Mira", "Bristol sounds lovely! Do you still play music?", "2023-03-10T18:01"),
    ("j2", "Jonas", "Yes, I play the cello in a small orchestra every Sunday.",
     "2023-03-10T18:02"),
    ("m2", "Mira", "I started a pottery class in Leeds this spring.", "2023-03-10T18:03"),
    ("j3", "Jonas", "Work at the harbour office keeps me busy these days.", "2023-09-02T19:00"),
    ("m3", "Mira", "My pottery teacher says my bowls are getting better.", "2023-09-02T19:01"),
    ("j4", "Jonas", "Big news: I moved to Cardiff last week, I live in Cardiff now.",
     "2024-05-14T20:00"),
    ("m4", "Mira", "Wow! How is the new flat?", "2024-05-14T20:01"),
    ("j5", "Jonas", "I gave up the cello. I play the drums now.", "2024-05-14T20:02"),
    ("m5", "Mira", "Drums! Your neighbours must love you.", "2024-05-14T20:03"),
]  # fmt: skip
NOW, BEFORE, CHANGE = (
    "Where does Jonas live now?",
    "Where did Jonas live before?",
    "When did Jonas move to Cardiff?",
)
MANUAL: dict[str, Any] = {"build.mode": "manual", "llm.kind": "none"}


def rank(hits: list[Any], turn: str) -> int:
    """The place of the first hit resting on ``turn`` (past the end if none)."""
    return next((i for i, h in enumerate(hits) if turn in h.sources), len(hits))


@pytest.fixture(params=["built", "unbuilt"])
def memory(  # type: ignore[misc]
    request: pytest.FixtureRequest, store_at: Callable[[str], str], embedder: Embedder
) -> Memory:
    """Every design built on the heuristic tier (their records know the change), or none
    (the turns themselves tell it)."""
    m = Memory.open(store_at("m"), embedder=embedder, namespace="c", **MANUAL)
    m.add_many(
        [
            {"id": i, "speaker": s, "text": t, "occurred_at": a, "session": a[:10]}
            for i, s, t, a in CHAT
        ]
    )
    built: set[str] = set()
    for r in m.recipes() if request.param == "built" else []:
        if r["builders"] and not set(r["builders"]) <= built:
            m.build(recipe=r["name"], tier="heuristic")
            built.update(r["builders"])
    yield m
    m.close()


def test_now_before_and_when_on_every_recipe(memory: Memory) -> None:
    wrong = []
    for r in memory.recipes():
        recipe = r["name"]
        now = memory.search(NOW, recipe=recipe, k=10).hits
        if not rank(now, "j4") <= rank(now, "j1") < len(now):
            wrong.append(f"{recipe}: now {[h.sources for h in now]}")
        before = memory.search(BEFORE, recipe=recipe, k=10).hits
        if not rank(before, "j1") <= rank(before, "j4") < len(before):
            wrong.append(f"{recipe}: before {[h.sources for h in before]}")
    assert not wrong, "\n".join(wrong)


def test_the_extract_answers_with_the_value_asked_for_and_what_it_replaced(
    memory: Memory,
) -> None:
    wrong = []
    for r in memory.recipes():
        recipe = r["name"]
        for question, first, other in ((NOW, "j4", "j1"), (BEFORE, "j1", "j4")):
            answer = memory.ask(question, recipe=recipe)
            text = answer.text
            ok = answer.sources[:2] == [first, other] and (
                text.index("Cardiff") < text.index("Bristol")
                if first == "j4"
                else text.index("Bristol") < text.index("Cardiff")
            )
            if not ok:
                wrong.append(f"{recipe}: {question!r} -> {answer.sources} {text!r}")
        # the change: the turn that states it first, and what it replaced after it if shown
        answer = memory.ask(CHANGE, recipe=recipe)
        text = answer.text
        ok = answer.sources[:1] == ["j4"] and (
            "Bristol" not in text or text.index("Cardiff") < text.index("Bristol")
        )
        if not ok:
            wrong.append(f"{recipe}: {CHANGE!r} -> {answer.sources} {text!r}")
    assert not wrong, "\n".join(wrong)


def test_a_question_with_no_change_in_its_hits_keeps_the_relevance_order(
    memory: Memory,
) -> None:
    """Present tense, nothing changed: the ranking is relevance's, the extract quotes
    in conversation order as before."""
    for r in memory.recipes():
        hits = memory.search("What class does Mira take?", recipe=r["name"], k=10).hits
        assert rank(hits, "m2") <= 1, (r["name"], [h.sources for h in hits])


LIFTS = [  # amounts said without a clause: the last one repeats none of the question's words
    ("l1", "Lena", "Guess who deadlifted 70 kg this morning!", "2023-08-12T09:00"),
    ("a1", "Ayşe", "70! You are getting strong. I only do Pilates.", "2023-08-12T09:01"),
    ("l2", "Lena", "85 kg deadlift yesterday! My coach screamed.", "2024-04-07T10:00"),
    ("a2", "Ayşe", "From 70 last summer! You're becoming a machine.", "2024-04-07T10:01"),
    ("l3", "Lena", "Final lift of the year: 95 kg. I'm done for 2024.", "2024-12-08T11:00"),
    ("a3", "Ayşe", "That's a hundred next year, then.", "2024-12-08T11:01"),
]  # fmt: skip


@pytest.mark.parametrize("recipe", ["default", "rag"])
def test_amounts_said_without_a_verb_are_a_succession_of_the_amount_asked_for(
    store_at: Callable[[str], str], embedder: Embedder, recipe: str
) -> None:
    """The speaker's amounts in the unit of one that says the question's word ("85 kg
    deadlift") follow each other, so "now" puts the latest first and the extract leads
    with it; "first" the earliest."""
    with Memory.open(store_at("m"), embedder=embedder, namespace="c", **MANUAL) as m:
        m.add_many([{"id": i, "speaker": s, "text": t, "occurred_at": a} for i, s, t, a in LIFTS])
        now = m.search("What is Lena's deadlift personal best now?", recipe=recipe, k=6).hits
        assert rank(now, "l3") < rank(now, "l2") < len(now)
        assert rank(now, "l3") < rank(now, "l1") < len(now)
        first = m.search("What was Lena's first deadlift?", recipe=recipe, k=6).hits
        assert rank(first, "l1") < min(rank(first, "l2"), rank(first, "l3"))
        answer = m.ask("What is Lena's deadlift personal best now?", recipe=recipe)
        assert answer.text.startswith("95 kg; before that 85 kg.")
        assert answer.sources[0] == "l3"
