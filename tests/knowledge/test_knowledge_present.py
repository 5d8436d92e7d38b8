"""What a question asks of time, and the order it gives the hits involved in a succession
of values: only they move, each group among its own places."""

from __future__ import annotations

import pytest

from memstrata.knowledge.asking import asked
from memstrata.knowledge.present import WINDOW, order, succession_of
from memstrata.models import Hit


@pytest.mark.parametrize(
    ("question", "wants"),
    [
        ("Where does Jonas live now?", "now"),
        ("Where does Jonas live?", "now"),  # present tense
        ("What instrument does Jonas play these days?", "now"),
        ("Is Zoë currently dating anyone?", "now"),
        ("Where did Jonas live before?", "past"),
        ("What instrument did Jonas use to play?", "past"),
        ("What was Ayşe's previous job?", "past"),
        ("Which city did the user first live in?", "first"),
        ("When did Jonas move to Cardiff?", "change"),
        ("How many times did Zoë's rent change?", "change"),
        ("What did Jonas eat at the party?", None),  # an event in the past
        ("Where has Mira camped?", None),  # a perfect gathers values
    ],
)
def test_what_a_question_asks_of_time(question: str, wants: str | None) -> None:
    assert asked(question) == wants


def hits(*turns: str) -> list[Hit]:
    return [Hit(kind="episode", id=t, text=t, score=0.5, sources=[t]) for t in turns]


def ids(found: list[Hit]) -> list[str]:
    return [h.id for h in found]


# j1 "I live in Bristol" < j4 "I moved to Cardiff" < j9 "we live in Newport now";
# c2 "I play the cello" < c5 "I gave up the cello"
PAIRS = [("j1", "j4"), ("j4", "j9"), ("c2", "c5")]


def test_only_the_hits_of_a_succession_move_each_group_among_its_own_places() -> None:
    ranked = hits("j1", "x", "c2", "j4", "y", "c5", "j9", "z")
    assert ids(order(ranked, "now", PAIRS)) == ["j9", "x", "c5", "j4", "y", "c2", "j1", "z"]
    # the value just before the current one first, then the older, the current last
    assert ids(order(ranked, "past", PAIRS)) == ["j4", "x", "c2", "j1", "y", "c5", "j9", "z"]
    assert ids(order(ranked, "first", PAIRS)) == ["j1", "x", "c2", "j4", "y", "c5", "j9", "z"]
    # a change: the turns where a new value appears, in their relevance order
    assert ids(order(ranked, "change", PAIRS)) == ["j4", "x", "c5", "j9", "y", "c2", "j1", "z"]


def test_nothing_moves_without_a_question_about_time_or_a_succession_in_the_hits() -> None:
    ranked = hits("j1", "x", "j4")
    assert ids(order(ranked, None, PAIRS)) == ["j1", "x", "j4"]
    assert ids(order(ranked, "now", [("j1", "q7")])) == ["j1", "x", "j4"]  # q7 not a hit
    assert ids(order(ranked, "now", [])) == ["j1", "x", "j4"]


def test_the_order_stays_within_the_first_window_of_sources() -> None:
    """A superseded turn past the window stays where it is: which turns are in the first
    WINDOW sources does not change."""
    filler = [f"f{i}" for i in range(WINDOW - 1)]
    ranked = hits("j1", *filler, "j4")
    assert ids(order(ranked, "now", PAIRS)) == ids(ranked)
    ranked = hits("j1", *filler[:-1], "j4", "f8")
    assert ids(order(ranked, "now", PAIRS))[0] == "j4"


def test_the_extract_picks_the_turn_asked_for_in_the_best_turns_succession() -> None:
    turns = ["j1", "c2", "j4", "j9"]  # best supported first
    assert succession_of("now", PAIRS, turns) == ["j9", "j4", "j1"]
    assert succession_of("past", PAIRS, turns) == ["j4", "j1", "j9"]
    assert succession_of("now", PAIRS, ["x", "j1"]) == []  # the best turn is in none
