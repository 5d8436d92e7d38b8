"""Knowledge-update figures of ``bench qa``: questions naming ``stale`` turns get "current
first" (the first evidence turn above every stale one), the recall of the current
evidence, and whether the extractive answer holds the current value, not the stale one."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from memstrata.embed import MiniLMEmbedder
from memstrata.errors import InvalidInputError
from memstrata.eval.qa import bench as qb
from memstrata.eval.qa import convert, formats, report
from memstrata.eval.qa import metrics_answer as ma
from memstrata.eval.qa import metrics_retrieval as mr
from memstrata.eval.qa.run import Options
from memstrata.memory import AsyncMemory


# the figures, by hand -------------------------------------------------------------------
def test_current_first_is_the_first_evidence_turn_above_every_stale_one() -> None:
    assert mr.current_first(["x", "now", "old"], ["now"], ["old"]) == 1.0
    assert mr.current_first(["old", "now"], ["now"], ["old"]) == 0.0
    # a stale turn that was not found at all is below the evidence
    assert mr.current_first(["x", "now2"], ["now", "now2"], ["old"]) == 1.0
    # no evidence found: not current first, even when no stale turn was found either
    assert mr.current_first(["x", "y"], ["now"], ["old"]) == 0.0
    metrics = mr.question_metrics(["old", "now"], ["now"], ["now"], [], {}, stale=["old"])
    assert metrics["current_first"] == 0.0 and metrics["recall@1"] == 0.0
    assert "current_first" not in mr.question_metrics(["now"], ["now"], ["now"], [], {})


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("[2024-05-02] Jonas: I moved to Cardiff last week.", 1.0),
        ("Cardiff, since May 2024; before that Bristol", 1.0),  # says what it replaced
        ("I moved from Bristol to Cardiff.", 0.0),  # the stale value comes first
        ("She lives with me in Bristol.", 0.0),
        ("cardiff!", 1.0),  # case and punctuation aside
        ("Cardiffian food is great.", 0.0),  # whole words only
    ],
)
def test_an_answer_holds_the_current_value_and_not_the_stale_one(
    answer: str, expected: float
) -> None:
    assert ma.current_answer(answer, False, "Cardiff", "Bristol") == expected
    assert ma.current_answer(answer, True, "Cardiff", "Bristol") == 0.0  # abstained


def test_values_are_compared_word_by_word_with_diacritics_and_digit_groups() -> None:
    assert ma.current_answer("We pay 2250 francs now.", False, "2,250 francs", "1,150 euros")
    assert ma.current_answer("Zürich, since August", False, "Zürich", "Utrecht") == 1.0
    assert ma.current_answer("Zurich, since August", False, "Zürich", "Utrecht") == 0.0
    # "project architect" is not "junior architect", though they share a word
    assert (
        ma.current_answer(
            "I'm a project architect now.", False, "project architect", "junior architect"
        )
        == 1.0
    )
    scored = ma.scores("Cardiff.", False, "Cardiff", "current", False, "Bristol")
    assert scored["current_answer"] == 1.0
    assert "current_answer" not in ma.scores("Cardiff.", False, "Cardiff", "current", False)


# the loader -----------------------------------------------------------------------------
def ku_set() -> list[dict[str, Any]]:
    turns = [
        ("t1", "Jonas", "2023-01-10T10:00:00", "I rent a room in Bristol near the harbour."),
        ("t2", "Mia", "2023-01-10T10:01:00", "Do you still play the cello on Sundays?"),
        ("t3", "Jonas", "2023-01-10T10:02:00", "Every Sunday, with the orchestra in town."),
        ("t4", "Mia", "2023-06-02T18:00:00", "The bakery on our street closed down."),
        ("t5", "Jonas", "2023-06-02T18:01:00", "My sister adopted a grey rabbit called Pip."),
        ("t6", "Jonas", "2024-05-02T09:00:00", "I moved to Cardiff: my new flat is by the bay."),
    ]
    return [
        {
            "sample_id": "jonas",
            "turns": [
                {"id": i, "speaker": who, "at": at, "session": i, "text": text}
                for i, who, at, text in turns
            ],
            "qa": [
                {
                    "id": "bay",
                    "question": "Who has a new flat by the bay in Cardiff?",
                    "answer": "Cardiff",
                    "evidence": ["t6"],
                    "stale": ["t1"],
                    "stale_answer": "Bristol",
                    "category": "current",
                },
                {
                    "id": "harbour",
                    "question": "Who rented a room in Bristol near the harbour?",
                    "answer": "Cardiff",
                    "evidence": ["t6"],
                    "stale": ["t1"],
                    "stale_answer": "Bristol",
                    "category": "current",
                },
                {
                    "id": "pet",
                    "question": "What is the rabbit called?",
                    "answer": "Pip",
                    "evidence": ["t5"],
                    "category": "unchanged",
                },
            ],
        }
    ]


def test_the_qaset_reader_takes_stale_turns_and_the_stale_value() -> None:
    (s,) = formats.from_qaset(ku_set())
    assert s.qa[0].stale == ["t1"] and s.qa[0].stale_answer == "Bristol"
    assert s.qa[2].stale == [] and s.qa[2].stale_answer is None
    # and writes them back
    assert convert.to_qaset([s])[0]["qa"][0]["stale"] == ["t1"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"stale": "t1"}, "question 0: stale is not a list"),
        ({"stale": ["t9"]}, r"question 0: stale names unknown turn ids \['t9'\]"),
        ({"stale": ["t6"]}, r"question 0: turns \['t6'\] are both evidence and stale"),
    ],
)
def test_bad_stale_ids_are_refused_with_the_question_named(
    change: dict[str, Any], message: str
) -> None:
    data = ku_set()
    data[0]["qa"][0].update(change)
    with pytest.raises(InvalidInputError, match=message):
        formats.from_qaset(data, "ku.json")


# end to end -----------------------------------------------------------------------------
def test_bench_qa_reports_current_first_recall_and_current_answers(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    """Two questions with stale turns: one worded like the current turn (it ranks first and
    the extract quotes it), one worded like the stale turn and in the past tense, so no
    order of the present applies (the stale turn ranks first and the extract quotes
    Bristol): current first and current answers are 1 of 2 each. A
    second sample reuses the question ids (ids are unique per sample): both count."""
    data = tmp_path / "ku.json"
    twice = ku_set() + [{**ku_set()[0], "sample_id": "jonas-again"}]
    data.write_text(json.dumps(twice))

    async def run() -> dict[str, Any]:
        memory = await AsyncMemory.open(tmp_path / "m.db", embedder=embedder)
        try:
            options = Options(["rag"], [], answers=True)
            return await qb.bench(memory, data, "qaset", options, tmp_path / "run")
        finally:
            await memory.close()

    result = asyncio.run(run())
    lines = (tmp_path / "run" / "questions.jsonl").read_text().splitlines()
    rows = {r["qid"]: r for r in map(json.loads, lines) if r["sample"] == "jonas"}
    assert rows["bay"]["ranked"][0] == "t6" and rows["harbour"]["ranked"][0] == "t1"
    assert rows["bay"]["retrieval"]["current_first"] == 1.0
    assert rows["harbour"]["retrieval"]["current_first"] == 0.0
    assert "current_first" not in rows["pet"]["retrieval"]
    assert rows["bay"]["scores"]["current_answer"] == 1.0
    assert rows["harbour"]["scores"]["current_answer"] == 0.0
    knowing = result["recipes"]["rag"]["knowledge"]
    assert result["recipes"]["rag"]["questions"] == 6
    assert knowing["questions"] == 4 and knowing["answered"] == 4
    assert knowing["current_first"] == 0.5 and knowing["current_answer"] == 0.5
    assert knowing["recall@10"] == 1.0  # six turns: the evidence is always in the first ten
    assert "Knowledge update" in report.markdown(result)
