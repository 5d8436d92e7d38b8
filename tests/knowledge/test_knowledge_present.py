"""What a question asks of time, and the order it gives the hits involved in a succession
of values: only they move, each group among its own places."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstrata.knowledge.asking import asked, focus, time_words, timeless
from memstrata.knowledge.present import (
    WINDOW,
    answering,
    asked_lead,
    asked_pairs,
    order,
    succession_of,
)
from memstrata.knowledge.statements import Statement
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


@pytest.mark.parametrize(
    ("question", "timely"),
    [
        ("Where does Zoë work now?", {"now"}),
        ("What car does Kwame drive these days?", {"these", "days"}),
        ("Is Ayşe still in Kadıköy?", {"still"}),
        ("Where did Jonas use to live?", {"use", "to"}),
        ("What was Lena's previous job?", {"previous"}),
        ("Which instrument does Jonas play?", set()),
    ],
)
def test_the_words_of_time_are_told_apart_from_the_content(question: str, timely: set[str]) -> None:
    assert time_words(question) == timely
    assert not timely & set(timeless(question).casefold().replace("?", "").split())


def test_a_question_is_read_for_whom_it_asks_and_what() -> None:
    asks = focus("Where does Zoë work now?", ["Zoë", "Mira"])
    assert asks.subjects == {"zoë"} and asks.words == {"work"}
    asks = focus("What car does the user drive these days?", ["user", "assistant"])
    assert asks.subjects == {"user"} and asks.words == {"car", "drive"}
    asks = focus("Where is Jonas's new job?", [])
    assert asks.subjects == {"jonas"} and asks.words == {"job"}  # "new" dates, names nothing


def said(
    source: str, value: str, slot: str = "play", subject: str = "kwame", **kw: object
) -> Statement:
    month = {"k1": 1, "k2": 2, "k3": 3, "k4": 4, "x": 5}[source]
    at = datetime(2024, month, 1, tzinfo=UTC).timestamp()
    return Statement(subject, slot, value, source, at, **kw)  # type: ignore[arg-type]


def test_the_statements_that_answer_are_the_subjects_own_in_the_slot_asked_about() -> None:
    asks = focus("What instrument does Kwame play now?", ["Kwame", "Lena"])
    stated = [
        said("k1", "trumpet"),
        said("k2", "Leeds", slot="live in"),  # another slot
        said("k3", "saxophone", subject="lena"),  # another person
        said("k4", "saxophone"),
        said("x", "trumpet", negated=True),  # ends a value, answers nothing
    ]
    # the trumpet was given up after: only the saxophone answers
    assert [s.source for s in answering(stated, asks)] == ["k4"]
    assert [s.source for s in answering(stated[:-1], asks)] == ["k1", "k4"]
    # a slot's preposition must be the question's: driving to someone names no car
    car = focus("What car does Kwame drive?", ["Kwame"])
    drives = [said("k1", "his mother", slot="drive to"), said("k2", "Polo", slot="drive")]
    assert [s.source for s in answering(drives, car)] == ["k2"]
    # a verb of the closed table names its slot: "work" asks for the employer
    work = focus("Where does Kwame work?", ["Kwame"])
    assert answering([said("k1", "Arup", slot="work at")], work) == [
        said("k1", "Arup", slot="work at")
    ]


def test_turns_stating_the_value_asked_for_are_linked_in_the_order_said() -> None:
    """No change needs to be learned: the question asks for one value."""
    stated = [said("k1", "trumpet"), said("k2", "trumpet"), said("k4", "saxophone")]
    assert asked_pairs("now", stated) == [("k1", "k2"), ("k2", "k4")]
    assert asked_pairs("past", stated) == [("k2", "k4")]  # a restatement is no change
    ranked = hits("k1", "x", "k2", "k4")
    assert ids(order(ranked, "now", asked_pairs("now", stated))) == ["k4", "x", "k2", "k1"]


def test_the_value_asked_for_heads_the_answer() -> None:
    stated = [said("k1", "trumpet"), said("k2", "trumpet"), said("k4", "saxophone")]
    assert asked_lead("now", stated) == ("saxophone, since April 2024; before that trumpet.", "k4")
    assert asked_lead("past", stated) == ("trumpet, until April 2024; then saxophone.", "k1")
    assert asked_lead("first", stated) == ("trumpet, until April 2024; then saxophone.", "k1")
    assert asked_lead("now", stated[:1]) == ("trumpet.", "k1")
    assert asked_lead("now", []) is None
    # of two slots the question's words name, a state's slot before an action's object
    home = [
        said("k1", "Bristol", slot="live in", state=True),
        said("k1", "harbour", slot="live near"),
    ]
    assert asked_lead("now", home) == ("Bristol.", "k1")


def test_where_the_speaker_is_answers_where_they_live_after_the_home_slot() -> None:
    asks = focus("Which city does Kwame live in now?", ["Kwame", "Lena"])
    here = [said("k1", "Utrecht", slot="be in", state=True), said("k3", "Zürich", slot="be in")]
    assert [s.source for s in answering(here, asks)] == ["k1", "k3"]
    assert asked_lead("now", answering(here, asks)) == (
        "Zürich, since March 2024; before that Utrecht.",
        "k3",
    )
    home = [*here, said("k2", "Leeds", slot="live in", state=True)]
    assert asked_lead("now", answering(home, asks)) == ("Leeds.", "k2")
    # "be in" answers no other question
    assert answering(here, focus("What does Kwame play?", ["Kwame"])) == []


def test_a_slots_word_named_by_a_longer_one_of_the_question() -> None:
    """ "monthly" names the rate slot "dkk per month"; "per" and the prepositions
    name nothing."""
    pay = [
        said("k1", "38,000 DKK", slot="dkk per month"),
        said("k4", "46,500 DKK", slot="dkk per month"),
    ]
    asks = focus("What is Kwame's monthly salary now?", ["Kwame"])
    assert [s.source for s in answering(pay, asks)] == ["k1", "k4"]
    assert answering(pay, focus("What does Kwame do per week?", ["Kwame"])) == []


def test_the_value_switched_to_takes_the_slot_of_the_one_it_ended() -> None:
    """ "I've switched from Japanese to Korean" after "I'm learning Japanese": Korean is
    what Kwame learns now, Japanese no longer."""
    stated = [
        said("k1", "Japanese", slot="learn"),
        said("k3", "Japanese", slot="", negated=True),
        said("k3", "Korean", slot="switch to"),
    ]
    asks = focus("Which language is Kwame learning now?", ["Kwame"])
    mine = answering(stated, asks)
    assert [(s.source, s.slot, s.value) for s in mine] == [("k3", "learn", "Korean")]
    assert asked_lead("now", mine) == ("Korean.", "k3")
    # moving to something in a turn that ends nothing moves nothing
    assert answering(
        [said("k1", "Japanese", slot="learn"), said("k3", "Korean", slot="switch to")], asks
    ) == [said("k1", "Japanese", slot="learn")]
