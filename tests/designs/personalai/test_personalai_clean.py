"""Cleaner heuristic structures (issue 59, item 5): no PersonalAI object made of
greetings, interjections or function words."""

from __future__ import annotations

from pathlib import Path

from tests.designs.chatter import built

from memstrata.eval.structures import noise


def test_no_greeting_or_function_word_is_an_object(tmp_path: Path, embedder) -> None:
    names = [o.name for o in built(tmp_path, embedder, "personalai", ("entity",))["entity"]]
    assert [n for n in names if noise(n)] == []
    assert {"Jonas", "Cardiff", "Škoda", "Plzeň", "Leeds"} <= set(names)
