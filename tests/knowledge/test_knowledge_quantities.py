"""Amounts a speaker states, and the successions a question about one asks for."""

from __future__ import annotations

import pytest

from memstrata.knowledge.asking import asks_amount, focus
from memstrata.knowledge.quantities import amount_lead, amount_pairs, amounts, asked_amounts


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Guess who deadlifted 70 kg this morning!", [("kg", "70 kg")]),
        ("Final lift of the year: 95 kg. I'm done for 2024.", [("kg", "95 kg")]),
        ("Great Manchester Run again — 47:35! Under 50 at last!", [("duration", "47:35")]),
        ("52 minutes 10 for the 10k.", [("duration", "52 minutes 10")]),
        ("My landlord just raised mine to 24,000 lira.", [("money", "24,000 lira")]),
        ("My rent is £950 now.", [("money", "£950")]),
        # a clock time, a date, a number without a unit: no amounts; a rate has its unit
        ("It's 4 am and the baby is awake.", []),
        ("We meet at 10:30 tomorrow.", []),
        ("I ride 80 km a week.", [("km per week", "80 km")]),
        ("Is 1,150 euros a month insane?", [("money", "1,150 euros")]),
        ("She was born on 21 February 2024.", []),
        ("Under 50 at last!", []),
        ("Zoë zahlt 2.250 Franken.", [("franken", "2.250 Franken")]),
    ],
)
def test_the_amounts_of_a_turn(text: str, found: list[tuple[str, str]]) -> None:
    assert [(a.unit, a.value) for a in amounts(text, source="t", speaker="Lena")] == found


def test_a_turn_without_a_speaker_states_no_amount() -> None:
    assert amounts("95 kg.", source="t", speaker=None) == []


TURNS = [
    ("l1", "Lena", "Guess who deadlifted 70 kg this morning!"),
    ("a1", "Ayşe", "I carried 20 kg of shopping home."),
    ("l2", "Lena", "My suitcase weighs 23 kg, and I still packed shoes."),
    ("l3", "Lena", "Final lift of the year: 95 kg."),
]


def _stated() -> list:  # type: ignore[type-arg]
    out = []
    for n, (i, who, text) in enumerate(TURNS):
        out += amounts(text, source=i, speaker=who, at=float(n))
    return out


def test_the_succession_is_the_subjects_amounts_in_the_anchors_unit() -> None:
    """Lena's kg amounts follow each other, the one that says "deadlift" anchoring
    them; Ayşe's are not Lena's. (The suitcase is in the succession too: a unit is
    all the reading knows of what an amount measures.)"""
    asks = focus("What is Lena's deadlift personal best now?", ["Lena", "Ayşe"])
    runs = asked_amounts(asks, _stated())
    assert [[a.source for a in run] for run in runs] == [["l1", "l2", "l3"]]
    assert amount_pairs("now", runs) == [("l1", "l2"), ("l2", "l3")]
    assert amount_lead("now", runs) == ("95 kg; before that 23 kg.", "l3")
    assert amount_lead("first", runs) == ("70 kg; then 23 kg.", "l1")


def test_no_succession_without_an_anchor_or_with_one_turn() -> None:
    stated = _stated()
    assert asked_amounts(focus("What does Lena cook?", ["Lena", "Ayşe"]), stated) == []
    # Ayşe has one amount: nothing follows it
    assert asked_amounts(focus("What did Ayşe carry home?", ["Lena", "Ayşe"]), stated) == []


def test_the_same_value_again_is_a_succession_only_for_now() -> None:
    stated = amounts("I lift 95 kg.", source="x", speaker="Lena", at=0.0) + amounts(
        "Still 95 kg on the deadlift.", source="y", speaker="Lena", at=1.0
    )
    runs = asked_amounts(focus("What is Lena's deadlift now?", ["Lena"]), stated)
    assert amount_pairs("now", runs) == [("x", "y")]
    assert amount_pairs("past", runs) == []


@pytest.mark.parametrize(
    ("question", "amount"),
    [
        ("How much rent does Ayşe pay now?", True),
        ("How long is the user's commute now?", True),
        ("What is Lena's deadlift personal best now?", True),
        ("What is the user's monthly salary now?", True),
        ("What car does the user drive now?", False),
        ("What did the user do before joining Prazdroj?", False),
        ("How does Lena get to work now?", False),
        ("Where does Zoë live?", False),
    ],
)
def test_which_questions_ask_for_an_amount(question: str, amount: bool) -> None:
    assert asks_amount(question) is amount
