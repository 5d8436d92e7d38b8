"""A question about a speaker read in her own voice."""

from __future__ import annotations

import pytest

from memstrata.retrieval.system1.voice import apart, in_voice


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


@pytest.mark.parametrize(
    ("question", "kate", "elise"),
    [
        (
            "Which cities have both, Kate and Elise, been to?",
            "Which cities have Kate been to?",
            "Which cities have Elise been to?",
        ),
        (
            "What do Elise and Kate have in common?",
            "What do Kate have in common?",
            "What do Elise have in common?",
        ),
        (
            "What games are both Kate and Elise interested in?",
            "What games are Kate interested in?",
            "What games are Elise interested in?",
        ),
        (
            "What are Kate and Elise's hobbies?",
            "What are Kate's hobbies?",
            "What are Elise's hobbies?",
        ),
        ("Kate & Elise both like what?", "Kate like what?", "Elise like what?"),
    ],
)
def test_a_pair_is_narrowed_to_each_of_its_people(question: str, kate: str, elise: str) -> None:
    assert apart(question, ["kate"], ["elise"]) == kate
    assert apart(question, ["elise"], ["kate"]) == elise


def test_a_pair_read_in_one_voice() -> None:
    narrowed = apart("What games are both Kate and Elise interested in?", ["kate"], ["elise"])
    assert narrowed is not None
    assert in_voice(narrowed, ["kate"]) == "What games am I interested in?"


def test_two_people_who_are_no_pair_are_left_alone() -> None:
    assert apart("Did Kate tell Elise about Rome?", ["kate"], ["elise"]) is None
    assert apart("What did Kate and Tom cook?", ["kate"], ["elise"]) is None
    assert apart("Where is Kate?", ["kate"], ["elise"]) is None
