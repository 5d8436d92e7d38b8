"""A question about a slot, answered from the turns that state its value, on every
recipe: Kwame's instrument changes once (one new object of an action verb, so no slot is
learned to hold one value and no succession is recorded), and a turn about his sister
says "now" without saying anything about instruments.

"What instrument does Kwame play now?" ranks the saxophone turn above the trumpet one,
and the extract answers "saxophone" first, quoting the turn that states it, never the
sister's "now". ``store_at`` runs it on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memstrata.embed.base import Embedder
from memstrata.memory import Memory

CHAT = [  # id, speaker, text, time
    ("k1", "Kwame", "I play the trumpet in a brass band on Thursdays.", "2023-02-05T18:00"),
    ("a1", "Ama", "A brass band! Is it loud in rehearsals?", "2023-02-05T18:01"),
    ("k2", "Kwame", "Very loud. My sister is a nurse now, she loves the night shifts.",
     "2023-02-05T18:02"),
    ("a2", "Ama", "I bought a road bike for the spring.", "2023-02-05T18:03"),
    ("k3", "Kwame", "These days I play the saxophone, mostly jazz in a small trio.",
     "2024-06-09T19:00"),
    ("a3", "Ama", "Jazz suits you. My road bike has a flat tyre again.", "2024-06-09T19:01"),
]  # fmt: skip
NOW = "What instrument does Kwame play now?"
MANUAL: dict[str, Any] = {"build.mode": "manual", "llm.kind": "none"}


def rank(hits: list[Any], turn: str) -> int:
    return next((i for i, h in enumerate(hits) if turn in h.sources), len(hits))


@pytest.fixture
def memory(store_at: Callable[[str], str], embedder: Embedder) -> Iterator[Memory]:
    m = Memory.open(store_at("m"), embedder=embedder, namespace="c", **MANUAL)
    m.add_many(
        [
            {"id": i, "speaker": s, "text": t, "occurred_at": a, "session": a[:10]}
            for i, s, t, a in CHAT
        ]
    )
    built: set[str] = set()
    for r in m.recipes():
        if r["builders"] and not set(r["builders"]) <= built:
            m.build(recipe=r["name"], tier="heuristic")
            built.update(r["builders"])
    yield m
    m.close()


def test_the_turn_stating_the_current_value_ranks_first_and_answers(memory: Memory) -> None:
    wrong = []
    for r in memory.recipes():
        recipe = r["name"]
        hits = memory.search(NOW, recipe=recipe, k=10).hits
        if not rank(hits, "k3") < rank(hits, "k1") < len(hits):
            wrong.append(f"{recipe}: order {[h.sources for h in hits]}")
        answer = memory.ask(NOW, recipe=recipe)
        text = answer.text
        ok = (
            text.startswith("saxophone")
            and answer.sources[:1] == ["k3"]
            and "k2" not in answer.sources  # "now" alone supports nothing
            and ("trumpet" not in text or text.index("saxophone") < text.index("trumpet"))
        )
        if not ok:
            wrong.append(f"{recipe}: answer {answer.sources} {text!r}")
    assert not wrong, "\n".join(wrong)


LOOKALIKE = [  # the other speaker's sentences resemble the question more than Kwame's
    ("k1", "Kwame", "I play the trumpet in a brass band.", "2023-02-05T18:00"),
    ("a1", "Ama", "What instrument should a beginner play in a brass band? The cornet, my "
     "teacher says.", "2023-02-05T18:01"),
    ("k2", "Kwame", "These days I play the saxophone, mostly jazz.", "2024-06-09T19:00"),
    ("a2", "Ama", "Which instrument to play now is my question too: I play the cornet now.",
     "2024-06-09T19:01"),
]  # fmt: skip


def test_the_value_stated_by_the_person_asked_about_answers_before_any_resemblance(
    store_at: Callable[[str], str], embedder: Embedder
) -> None:
    """Ama's sentences resemble the question more than Kwame's (991760c abstained: another
    speaker's sentence supports the question better); Kwame's own statements in the slot
    asked about are the answer."""
    m = Memory.open(store_at("l"), embedder=embedder, namespace="c", **MANUAL)
    try:
        m.add_many(
            [
                {"id": i, "speaker": s, "text": t, "occurred_at": a, "session": a[:10]}
                for i, s, t, a in LOOKALIKE
            ]
        )
        answer = m.ask(NOW, recipe="default")
        assert not answer.abstained
        assert answer.text.startswith("saxophone, since June 2024; before that trumpet.")
        assert answer.sources == ["k2", "k1"]
    finally:
        m.close()
