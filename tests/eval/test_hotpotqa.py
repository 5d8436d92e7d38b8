import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.cli.main import app
from memstrata.errors import InvalidInputError
from memstrata.eval import hotpotqa

CORPUS = {
    "Blue Lake": ["Blue Lake is a crater lake in Oregon.", " It is fed by snowmelt."],
    "Crater Park": ["Crater Park surrounds Blue Lake.", " It opened in 1902."],
    "Red River": ["The Red River flows through Texas."],
    "Empty": [],
}
QUESTIONS = [
    {
        "_id": "q1",
        "question": "When did the park around Blue Lake open?",
        "answer": "1902",
        "type": "bridge",
        "supporting_facts": [["Blue Lake", 0], ["Crater Park", 1], ["Crater Park", 0]],
    },
    {
        "_id": "q2",
        "question": "Which river flows through Texas?",
        "answer": "Red River",
        "type": "comparison",
        "supporting_facts": [["Red River", 0]],
    },
]


def write(tmp_path: Path, questions: object = QUESTIONS, corpus: object = CORPUS) -> Path:
    (tmp_path / "hotpotqa_train.json").write_text(json.dumps(questions))
    (tmp_path / "hotpotqa_train_corpus.json").write_text(json.dumps(corpus))
    return tmp_path


def test_load_passages_and_distinct_supporting_titles(tmp_path: Path) -> None:
    q, c = hotpotqa.resolve_paths(write(tmp_path))
    passages, questions = hotpotqa.load(q, c)
    assert [p["id"] for p in passages] == ["Blue Lake", "Crater Park", "Red River"]
    assert passages[0]["text"] == "Blue Lake is a crater lake in Oregon. It is fed by snowmelt."
    assert questions[0].supporting == ("Blue Lake", "Crater Park")


def test_score_recall_and_both_found() -> None:
    qs = [
        hotpotqa.Question("a", "?", "", "bridge", ("x", "y")),
        hotpotqa.Question("b", "?", "", "bridge", ("z",)),
    ]
    ranked = [["x", "p", "q", "r", "s", "y"], ["z"]]
    m = hotpotqa.score(ranked, qs)
    assert m["R@2"] == pytest.approx((0.5 + 1.0) / 2)
    assert m["R@10"] == 1.0
    assert m["both@5"] == 0.5  # y is sixth for the first question
    assert m["both@10"] == 1.0


def test_bad_files_are_named(tmp_path: Path) -> None:
    bad = write(tmp_path, questions=[{"question": "no facts"}])
    with pytest.raises(InvalidInputError, match="question 0 is malformed"):
        hotpotqa.load(*hotpotqa.resolve_paths(bad))
    unknown = [{"question": "?", "supporting_facts": [["Nowhere", 0]]}]
    with pytest.raises(InvalidInputError, match="Nowhere"):
        hotpotqa.load(*hotpotqa.resolve_paths(write(tmp_path, questions=unknown)))


def test_bench_command_end_to_end(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    data = write(tmp_path / "data")
    result = CliRunner().invoke(
        app, ["bench", "hotpotqa", str(data), "--recipe", "rag", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "hotpotqa.json").read_text())
    overall = report["systems"]["rag"]["metrics"]["overall"]
    assert report["passages"] == 3 and overall["n"] == 2
    # Three passages in all: every supporting passage is within the first 5.
    assert overall["both@5"] == 1.0
