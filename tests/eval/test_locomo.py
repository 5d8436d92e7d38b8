from pathlib import Path

import pytest

from memstrata.errors import InvalidInputError
from memstrata.eval.metrics import distinct_sources, recall_precision, summarise
from memstrata.importers import locomo

DATA = Path(__file__).parent.parent / "data" / "tiny_locomo.json"


def test_load_turns_sessions_dates_and_captions() -> None:
    convs = locomo.load(DATA)
    assert [c.namespace for c in convs] == ["tiny-1", "tiny-2"]
    turns = convs[0].turns
    assert [t["id"] for t in turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert turns[2]["metadata"]["image_caption"] == "a photo of a blue ceramic bowl on a table"
    assert turns[3]["session"] == "session_2"
    assert turns[3]["occurred_at"].isoformat() == "2023-04-20T16:30:00"


def test_evidence_cleaning() -> None:
    known = {"D1:1", "D1:2", "D3:7", "D30:5"}
    assert locomo.clean_evidence(["D:1:1", "D30:05", "D3:7,D1:2", "D9:9", "D1:1"], known) == [
        "D1:1",
        "D30:5",
        "D3:7",
        "D1:2",
    ]
    convs = locomo.load(DATA)
    assert convs[0].questions[2].evidence == ["D1:3", "D1:1"]
    assert convs[1].questions[0].evidence == ["D1:1"]
    assert convs[1].questions[1].evidence == ["D1:2"]


def test_adversarial_answer_is_kept() -> None:
    q = locomo.load(DATA)[0].questions[3]
    assert q.category == 5 and q.answer == "glaze"


def test_bad_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidInputError, match="cannot read LoCoMo file"):
        locomo.load(bad)
    bad.write_text('"a string"')
    with pytest.raises(InvalidInputError, match="not a LoCoMo file"):
        locomo.load(bad)


def test_session_time_formats() -> None:
    assert locomo.parse_session_time("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00"
    assert locomo.parse_session_time("nonsense") is None


def test_metrics_count_distinct_sources_in_order() -> None:
    ranked = distinct_sources([["a"], ["b", "a"], ["c"], ["d", "e"]])
    assert ranked == ["a", "b", "c", "d", "e"]
    assert recall_precision(ranked, ["b", "e"], 2) == (0.5, 0.5)
    assert recall_precision(ranked, ["b", "e"], 5) == (1.0, 0.4)
    assert recall_precision([], ["x"], 5) == (0.0, 0.0)


def test_summarise_groups_and_overall() -> None:
    rows = [
        (1, ["a", "b"], ["a"]),
        (4, ["c", "d"], ["d"]),
        (5, ["e"], ["e"]),
        (4, ["x"], []),  # no evidence: skipped
    ]
    s = summarise(rows, (1, 2), {1, 2, 3, 4})
    assert s["1"]["R@1"] == 1.0
    assert s["4"]["R@1"] == 0.0 and s["4"]["R@2"] == 1.0
    assert s["overall"]["n"] == 2 and s["overall"]["R@1"] == 0.5
    assert "5" in s and s["5"]["n"] == 1
