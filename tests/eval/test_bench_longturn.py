"""The long-turn chat generator: turns of the advertised size, and questions whose
evidence turn states the planted fact."""

from __future__ import annotations

import re

from memstrata.eval.bench_longturn import long_chat


def test_long_chat_has_long_alternating_turns_and_planted_evidence() -> None:
    turns, questions = long_chat(n_turns=40, n_questions=12, seed=3)
    assert len(turns) == 40 and len(questions) == 12
    assert all(2_750 <= len(t["text"]) <= 3_300 for t in turns)
    assert [t["speaker"] for t in turns[:4]] == ["user", "assistant", "user", "assistant"]
    by_id = {t["id"]: t["text"] for t in turns}
    for question, evidence in questions:
        who, verb, obj = re.match(r"Where did (\w+) (\w+) the (\w+)\?", question).groups()  # type: ignore[union-attr]
        planted = f"{who} {verb} the {obj} at "
        holders = [i for i, text in by_id.items() if planted in text]
        assert holders == [evidence], question  # stated in that turn and nowhere else
    assert long_chat(n_turns=40, n_questions=12, seed=3) == (turns, questions)  # seeded
