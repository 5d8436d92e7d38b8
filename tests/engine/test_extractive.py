"""``ask`` without an LLM, as a user tried it on every recipe: an honest extract.

The answer quotes the episodes' own sentences, each once, with the date and the speaker
of the episode that said it, never a record's markup; it keeps the name asked for; and it
says "Not in memory." (abstains) when the memory does not hold the answer, including when
it holds it for another person.
"""

from __future__ import annotations

import re

import pytest

from memstrata.engine import NOT_IN_MEMORY
from memstrata.memory import Memory

CHAT = [  # id, speaker, text, time
    ("p1", "Priya", "Hey Daniel! How was the break?", "2024-01-05T10:00"),
    ("d1", "Daniel", "The break was great. I found a room in Carlisle for the new job.",
     "2024-01-05T10:01"),
    ("p2", "Priya", "Nice! Do you like Carlisle?", "2024-01-05T10:02"),
    ("d2", "Daniel", "Yes, I work at the Carlisle library now. My cat Moss loves the window.",
     "2024-01-05T10:03"),
    ("p3", "Priya", "Back from Porto! I learned some Portuguese there.", "2024-02-10T09:00"),
    ("p4", "Priya", "Back from Porto! The pastel de nata was the best part.", "2024-02-10T09:01"),
    ("d3", "Daniel", "Big news: I got posted to Lancaster, so I moved there last week.",
     "2024-03-01T09:00"),
    ("d4", "Daniel", "I now work at the Lancaster museum.", "2024-03-01T09:01"),
]  # fmt: skip
ANSWERABLE = {
    "What is Daniel's cat called?": "Moss",
    "Which language did Priya learn?": "Portuguese",
    "Where does Daniel work now?": "Lancaster museum",
}
UNANSWERABLE = [
    "What is the name of Priya's dog?",  # nothing of the kind
    "Where does Priya work?",  # the memory has it for Daniel, not for Priya
]
MARKUP = re.compile(r"\(valid |\[category|layer \d|\(entity |\(fact |<|>|\bnow\)$")


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, embedder) -> Memory:  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("ask") / "m.db"
    m = Memory.open(path, embedder=embedder, namespace="c", **{"build.mode": "manual"})
    m.add_many(
        [
            {"id": i, "speaker": s, "text": t, "occurred_at": a, "session": a[:7]}
            for i, s, t, a in CHAT
        ]
    )
    built: set[str] = set()
    for r in m.recipes():
        if r["builders"] and not set(r["builders"]) <= built:
            m.build(recipe=r["name"])
            built.update(r["builders"])
    yield m
    m.close()


def recipes(memory: Memory) -> list[str]:
    return [r["name"] for r in memory.recipes()]


def test_the_extract_quotes_the_episodes_honestly_for_every_recipe(memory: Memory) -> None:
    turns = {i: (s, t, a[:10]) for i, s, t, a in CHAT}
    for recipe in recipes(memory):
        for question, expected in ANSWERABLE.items():
            answer = memory.ask(question, recipe=recipe)
            where = f"{recipe}: {question!r} -> {answer.text!r}"
            assert answer.extractive and not answer.abstained and answer.sources, where
            assert expected in answer.text, where  # the name asked for is kept
            assert not MARKUP.search(answer.text), where
            rest = answer.text
            for source in answer.sources:  # each quote: [date] speaker: its own sentence
                speaker, text, date = turns[source]
                head = f"[{date}] {speaker}: "
                assert head in rest, where
                quote = rest.split(head, 1)[1].split(" [", 1)[0]
                assert quote and quote in text, where
                rest = rest.replace(head + quote, "", 1)
                assert quote not in rest, where  # each sentence once
            assert "] " not in rest, where  # nothing quoted without its source


def test_the_extract_says_not_in_memory_when_it_is_not(memory: Memory) -> None:
    for recipe in recipes(memory):
        for question in UNANSWERABLE:
            answer = memory.ask(question, recipe=recipe)
            assert answer.abstained and answer.sources == [], f"{recipe}: {answer.text!r}"
            assert answer.text == NOT_IN_MEMORY


def test_a_weak_second_sentence_is_left_out(memory: Memory) -> None:
    answer = memory.ask("What is Daniel's cat called?", recipe="default")
    assert answer.text == "[2024-01-05] Daniel: My cat Moss loves the window."
    assert answer.sources == ["d2"] and answer.support is not None and answer.support >= 0.3
