"""Readers and converters: LoCoMo, LongMemEval, the QA set, HotpotQA; bad files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memstrata.errors import InvalidInputError
from memstrata.eval.qa import convert, formats
from memstrata.eval.qa.run import select

DATA = Path(__file__).parents[2] / "data" / "tiny_locomo.json"
#: the shared data beside the clone (CI has it there); the project itself does not need it
HOTPOT = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "hotpotqa"


def lme_record(qid: str = "q1", **extra: Any) -> dict[str, Any]:
    rec = {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "What breed is my dog?",
        "answer": "a beagle",
        "question_date": "2023/05/30 (Tue) 10:00",
        "haystack_session_ids": ["s_a", "s_b"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 09:05"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "I adopted a beagle last week.", "has_answer": True},
                {"role": "assistant", "content": "Congratulations on the new dog!"},
            ],
            [{"role": "user", "content": "Any tips for baking bread?"}],
        ],
        "answer_session_ids": ["s_a"],
    }
    rec.update(extra)
    return rec


def test_locomo_reader_names_categories_and_marks_adversarial() -> None:
    samples = formats.load(DATA, "locomo")
    assert [s.id for s in samples] == ["tiny-1", "tiny-2"]
    qa = samples[0].qa
    assert [q.category for q in qa][:2] == ["single-hop", "temporal"]
    adversarial = qa[3]
    assert adversarial.abstain and adversarial.answer is None
    assert adversarial.category == "adversarial" and adversarial.candidate == "glaze"
    assert all(q.candidate is None for q in qa if q is not adversarial)
    assert qa[2].evidence == ["D1:3", "D1:1"] and qa[2].evidence_sessions == ["session_1"]


def test_longmemeval_reader() -> None:
    data = [lme_record(), lme_record("q2_abs", answer="You did not mention it")]
    samples = formats.from_longmemeval(data)
    assert [s.id for s in samples] == ["q1", "q2_abs"]
    s = samples[0]
    assert [t.id for t in s.turns] == ["s_a:0", "s_a:1", "s_b:0"]
    assert s.turns[0].speaker == "user" and s.turns[2].session == "s_b"
    assert s.turns[0].at is not None and s.turns[0].at.isoformat() == "2023-05-20T02:21:00"
    q = s.qa[0]
    assert q.evidence == ["s_a:0"] and q.evidence_sessions == ["s_a"]
    assert q.category == "single-session-user" and not q.abstain
    assert samples[1].qa[0].abstain


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"x": 1}, "expected a list of questions"),
        ([lme_record(question=None)], r"question 0 \(q1\): the question is empty"),
        ([{"question_id": "q9"}], r"question 0 \(q9\) has no 'question'"),
        ([lme_record(haystack_session_ids=["s_a"])], "differ in length"),
        (
            [lme_record(haystack_sessions=[[{"role": "user"}], []])],
            "session s_a turn 0 has no text content",
        ),
        ([lme_record(), lme_record()], "question_id 'q1' appears twice"),
    ],
)
def test_longmemeval_bad_records_are_named(data: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        formats.from_longmemeval(data, "lme.json")


def qaset() -> list[dict[str, Any]]:
    return [
        {
            "sample_id": "doc",
            "turns": [
                {"id": "p1", "text": "Basil grows well in sun.", "session": "garden"},
                {"id": "p2", "text": "Mint spreads quickly.", "at": "2024-03-01T10:00:00"},
            ],
            "qa": [
                {"question": "What spreads?", "evidence": ["p2"], "answer": "mint"},
                {
                    "question": "Who won?",
                    "evidence": [],
                    "abstain": True,
                    "category": "trap",
                    "candidate": "Basil",
                },
            ],
        }
    ]


def test_qaset_reader() -> None:
    (s,) = formats.from_qaset(qaset())
    assert s.turns[1].at is not None and s.turns[1].at.year == 2024
    assert [q.id for q in s.qa] == ["doc:q0", "doc:q1"]
    assert s.qa[0].evidence == ["p2"] and s.qa[0].category == "all"
    assert s.qa[1].abstain and s.qa[1].answer is None and s.qa[1].category == "trap"
    assert s.qa[1].candidate == "Basil" and s.qa[0].candidate is None


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d[0].pop("sample_id"), "sample 0 has no sample_id"),
        (lambda d: d[0]["turns"][1].pop("text"), r"sample 'doc' turn 1 \(p2\) has no text"),
        (lambda d: d[0]["turns"][0].pop("id"), "sample 'doc' turn 0 has no id"),
        (lambda d: d[0]["turns"][1].update(at="yesterday"), "'at' is not an ISO date"),
        (lambda d: d[0]["turns"][1].update(id="p1"), "turn id 'p1' appears twice"),
        (lambda d: d[0]["qa"][0].update(evidence=["p7"]), r"question 0: evidence names .*p7"),
        (lambda d: d[0]["qa"][1].update(question=" "), "question 1 has no question"),
        (lambda d: d[0].update(qa="none"), "needs a list of turns and a list of qa"),
        (lambda d: d.append(d[0]), "sample_id 'doc' appears twice"),
    ],
)
def test_qaset_bad_records_are_named(mutate: Any, message: str) -> None:
    data = qaset()
    mutate(data)
    with pytest.raises(InvalidInputError, match=message):
        formats.from_qaset(data, "set.json")


def test_unreadable_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    for fmt in ("qaset", "longmemeval", "locomo"):
        with pytest.raises(InvalidInputError, match="cannot read"):
            formats.load(bad, fmt)
    with pytest.raises(InvalidInputError, match="unknown format"):
        formats.load(bad, "csv")


def test_locomo_to_qaset_reads_back_the_same(tmp_path: Path) -> None:
    samples = formats.load(DATA, "locomo")
    path = convert.write(convert.convert(DATA, "locomo"), tmp_path / "set.json")
    again = formats.load(path, "qaset")
    assert [(t.id, t.text, t.speaker, t.at, t.session) for s in again for t in s.turns] == [
        (t.id, t.text, t.speaker, t.at, t.session) for s in samples for t in s.turns
    ]
    assert [(q.id, q.answer, q.category, q.evidence, q.abstain) for s in again for q in s.qa] == [
        (q.id, q.answer, q.category, q.evidence, q.abstain) for s in samples for q in s.qa
    ]
    assert again[0].turns[2].metadata["image_caption"].startswith("a photo of")


def test_hotpotqa_converter(tmp_path: Path) -> None:
    questions = [
        {
            "_id": "h1",
            "question": "Which came first?",
            "answer": "Alpha",
            "type": "comparison",
            "supporting_facts": [["Alpha", 0], ["Beta", 1], ["Alpha", 1]],
            "context": [["Alpha", ["Alpha is old.", " It came first."]], ["Beta", ["B.", " C."]]],
        }
    ]
    path = tmp_path / "h.json"
    path.write_text(json.dumps(questions))
    (s,) = convert.from_hotpotqa(path)
    assert [t.id for t in s.turns] == ["Alpha", "Beta"]
    assert s.turns[0].text == "Alpha is old. It came first."
    assert s.qa[0].evidence == ["Alpha", "Beta"] and s.qa[0].category == "comparison"
    corpus = tmp_path / "c.json"
    corpus.write_text(json.dumps({"Alpha": ["A."]}))
    with pytest.raises(InvalidInputError, match=r"supporting passages \['Beta'\]"):
        convert.from_hotpotqa(path, corpus)


@pytest.mark.skipif(not HOTPOT.exists(), reason="the HotpotQA sample is not on this machine")
def test_hotpotqa_sample_converts_to_document_memory(tmp_path: Path) -> None:
    samples = convert.convert(
        HOTPOT / "hotpotqa_train.json", "hotpotqa", HOTPOT / "hotpotqa_train_corpus.json"
    )
    out = convert.write(samples, tmp_path / "hotpot.json")
    (s,) = formats.load(out, "qaset")
    assert len(s.qa) == 100 and len(s.turns) == 994
    assert all(len(q.evidence) == 2 for q in s.qa)


def test_limit_and_sample_select_questions() -> None:
    samples = formats.load(DATA, "locomo")
    total = sum(len(s.qa) for s in samples)
    first = select(samples, 2, None, 0)
    assert [q.id for s in first for q in s.qa] == [q.id for q in samples[0].qa[:2]]
    drawn = select(samples, None, 3, seed=1)
    assert sum(len(s.qa) for s in drawn) == 3
    assert drawn == select(samples, None, 3, seed=1)
    assert sum(len(s.qa) for s in select(samples, None, total + 5, 0)) == total
