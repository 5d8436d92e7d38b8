"""Likes and dislikes in questions and turns (retrieval/system1/stance.py)."""

import pytest

from memstrata.retrieval.system1.stance import asks, states


@pytest.mark.parametrize(
    ("question", "polarity"),
    [
        ("What is Gina's favourite style of dance?", "like"),
        ("Does she like jazz?", "like"),
        ("How do they both like to destress?", "like"),
        ("What does he dislike?", "dislike"),
        ("What food doesn't she enjoy?", "dislike"),
        ("What does Ana not like about her job?", "dislike"),
        ("Does Vanessa avoid crowds?", "dislike"),
        ("What is her least favorite chore?", "dislike"),
        ("What did the cake look like?", None),  # comparing, not preferring
        ("What would you like to eat?", None),
        ("Where did she go last week?", None),
    ],
)
def test_asks(question: str, polarity: str | None) -> None:
    assert asks(question) == polarity


@pytest.mark.parametrize(
    ("text", "polarities"),
    [
        ("I love salsa dancing!", {"like"}),
        ("My favorite book is Dune.", {"like"}),
        ("She's a huge fan of opera.", {"like"}),
        ("I can't stand crowds.", {"dislike"}),
        ("I don't really like horror movies.", {"dislike"}),  # not also a like
        ("I'm not a fan of jazz, but I love blues.", {"like", "dislike"}),
        ("That looks like fun.", set()),
        ("We went to the lake.", set()),
    ],
)
def test_states(text: str, polarities: set[str]) -> None:
    assert states(text) == polarities


def test_titles_are_not_preferences() -> None:
    assert asks("Who starred in the film In Love and War?") is None
    assert asks('Which singer recorded "A Man Without Love"?') is None
    assert asks("Love or hate: what does she feel about jazz?") == "dislike"
