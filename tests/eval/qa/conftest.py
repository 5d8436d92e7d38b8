"""The LongMemEval-format fixture the bench tests write: three questions, each with its
own haystack (one answer session; an answer spread over two sessions; an abstention)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

FILLER = [
    "Any tips for baking sourdough bread at home?",
    "What is a good stretching routine after running?",
    "Can you recommend a novel about the sea?",
    "How do I repot a fiddle leaf fig?",
]


def session(*texts: str, answer: int | None = None) -> list[dict[str, Any]]:
    turns = []
    for i, text in enumerate(texts):
        turn: dict[str, Any] = {"role": "user" if i % 2 == 0 else "assistant", "content": text}
        if i == answer:
            turn["has_answer"] = True
        turns.append(turn)
    return turns


def lme_fixture() -> list[dict[str, Any]]:
    """Three questions, each with its own haystack: one answer session, one with the
    answer spread over two sessions, one abstention question."""
    filler = [session(t, "Sure, here is some advice.") for t in FILLER]
    ids = [f"f{i}" for i in range(len(filler))]
    dates = [f"2023/05/{10 + i} (Wed) 10:00" for i in range(len(filler))]

    def record(qid: str, qtype: str, question: str, answer: str, extra: list[Any]) -> Any:
        sessions = filler + [s for _, s in extra]
        sids = ids + [sid for sid, _ in extra]
        return {
            "question_id": qid,
            "question_type": qtype,
            "question": question,
            "answer": answer,
            "question_date": "2023/06/01 (Thu) 09:00",
            "haystack_session_ids": sids,
            "haystack_dates": dates + [f"2023/05/2{i} (Sat) 08:00" for i in range(len(extra))],
            "haystack_sessions": sessions,
            "answer_session_ids": [sid for sid, s in extra if any("has_answer" in t for t in s)],
        }

    return [
        record(
            "dog",
            "single-session-user",
            "What breed is the dog I adopted?",
            "a beagle",
            [("a1", session("I adopted a beagle puppy named Max.", "Lovely!", answer=0))],
        ),
        record(
            "trips",
            "multi-session",
            "Which two cities did I visit for conferences?",
            "Lisbon and Oslo",
            [
                ("b1", session("I flew to Lisbon for a conference.", "Nice.", answer=0)),
                ("b2", session("Next conference trip: Oslo in winter.", "Brr.", answer=0)),
            ],
        ),
        record(
            "car_abs",
            "single-session-user",
            "What colour is my motorbike?",
            "You did not mention a motorbike.",
            [("c1", session("My car is a red hatchback.", "Nice car."))],
        ),
    ]


@pytest.fixture
def lme_file(tmp_path: Path) -> Path:
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(lme_fixture()))
    return path
