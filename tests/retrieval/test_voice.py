"""A question about a speaker read in her own voice."""

from __future__ import annotations

import pytest

from memstrata.retrieval.voice import in_voice


@pytest.mark.parametrize(
    ("question", "names", "voiced"),
    [
        ("What country does Elise live in?", ["elise"], "What country do I live in?"),
        ("What are Kate's hobbies?", ["kate", "emi"], "What are my hobbies?"),
        ("Is Elise vegan?", ["elise"], "Am I vegan?"),
        ("Has Tom ever been to Rome?", ["tom"], "Have I ever been to Rome?"),
        ("Elise is from where?", ["elise"], "I am from where?"),
        ("When did Melanie paint a sunrise?", ["melanie"], "When did I paint a sunrise?"),
        ("What did Mel tell Caroline about?", ["caroline"], "What did Mel tell me about?"),
        ("Who gave a book to Anna?", ["anna"], "Who gave a book to me?"),
        ("What are Lucas' plans?", ["lucas"], "What are my plans?"),
    ],
)
def test_the_name_becomes_the_first_person(question: str, names: list[str], voiced: str) -> None:
    assert in_voice(question, names) == voiced


def test_a_question_without_the_name_has_no_voice() -> None:
    assert in_voice("What is the capital of France?", ["elise"]) is None
    # a longer word that starts with the name is not the name
    assert in_voice("Where is Toms River?", ["tom"]) is None
