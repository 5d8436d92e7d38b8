"""What a turn states (memstrata.knowledge.statements), on issue 59's sentences."""

from __future__ import annotations

from memstrata.knowledge.statements import EMPLOYER, ENDED, HAS, HOME, Statement, statements

Said = set[tuple[str, str, str, bool]]


def said(text: str, speaker: str = "Jonas", addressee: str = "Mia") -> Said:
    return {
        (s.subject, s.slot, s.value, s.negated)
        for s in statements(text, source="e1", at=5.0, speaker=speaker, addressee=addressee)
    }


def test_a_move_is_the_home_slot_of_the_speaker() -> None:
    assert ("jonas", HOME, "Cardiff", False) in said("I moved to Cardiff last week!")
    assert ("jonas", HOME, "Bristol", False) in said("I live in Bristol now.")
    assert ("jonas", HOME, "Leeds", False) in said("We've settled in Leeds!")  # the household


def test_said_indirectly_by_a_possessed_noun_of_the_workplace() -> None:
    assert ("jonas", EMPLOYER, "Vattenfall", False) in said("My new boss at Vattenfall is lovely.")
    assert ("jonas", EMPLOYER, "Deltares", False) in said("I work at Deltares as a hydrologist.")


def test_said_by_the_other_speaker() -> None:
    """Mia asks Jonas about Cardiff: the addressee lives there."""
    assert said("How's Cardiff treating you?", speaker="Mia", addressee="Jonas") == {
        ("jonas", HOME, "Cardiff", False)
    }


def test_numeric_attributes_and_possessed_attributes() -> None:
    assert ("jonas", "rent", "£950", False) in said("My rent is now £950 a month.")
    assert ("jonas", "km per week", "40 km", False) in said("I run 40 km a week now.")
    assert ("jonas", "km per week", "60 km", False) in said("I'm doing about 60 km a week.")
    assert ("jonas", "hour per week", "two hours", False) in said("I do two hours a week.")
    assert ("jonas", "favourite food", "ramen", False) in said("My favourite food is ramen.")


def test_negation_and_verbs_that_end_a_state() -> None:
    assert ("jonas", "play", "cello", True) in said("I no longer play the cello.")
    assert ("jonas", ENDED, "Deltares", True) in said("I quit Deltares in May.")


def test_questions_plans_and_past_events_state_nothing_current() -> None:
    assert said("Do you live in Bristol?") == set()
    assert said("I'll move to Leeds next year.") == set()
    assert said("I visited Paris and Rome last summer.") == set()


def test_a_statement_keeps_its_source_and_time() -> None:
    (s,) = [x for x in statements("I moved to Cardiff.", source="ep-9", at=7.0, speaker="Jonas")]
    assert s == Statement("jonas", HOME, "Cardiff", "ep-9", 7.0, False, True)


def test_presupposed_owned_and_ended() -> None:
    """A "still" question presupposes the state; a name owned is had until sold; a
    light verb names no relation; a second subject of the verb is still the speaker."""
    asked = said("Why do you still drive to Henkel?", speaker="Ayşe", addressee="Lena")
    assert asked == {("lena", "drive to", "Henkel", False)}
    assert ("jonas", HAS, "Škoda Fabia", False) in said("My old Škoda Fabia smells of hops.")
    assert ("jonas", ENDED, "Polo", True) in said("I sold the Polo!")
    assert said("I'm doing the fingerpicking course.") == set()
    assert ("jonas", ENDED, "Henkel", True) in said("Big news, actually: I left Henkel!")


def test_a_document_longer_than_a_turn_is_not_read() -> None:
    from memstrata.knowledge.statements import LONGEST

    text = "I moved to Cardiff. " * (LONGEST // 20 + 1)
    assert len(text) > LONGEST and said(text) == set()
    assert said("I moved to Cardiff. " * 10) == {("jonas", HOME, "Cardiff", False)}


def test_contractions_with_typographic_apostrophes() -> None:
    """Text typed on phones: "’" in every contraction. Read like the plain apostrophe,
    without a clause whose verb has no lemma."""
    assert ("jonas", HOME, "Cardiff", False) in said("I’ve moved to Cardiff, it’s lovely!")
    # "there's" joined to the speaker's clause gives him no value ("job: lot")
    assert not said("Ive never thought about it but there’s a lot of places I wanna visit")
    assert said("Here’s a photo, what a plane isn’t it?? That’s the best. I’ll talk to you!") == (
        said("Here's a photo, what a plane isn't it?? That's the best. I'll talk to you!")
    )


def test_a_riddle_and_a_role_on_a_possessed_noun_are_the_speakers() -> None:
    """ "Guess who's ..." tells of the speaker; "my first day as X at Y" states the job
    and the employer, as a role said of nobody in particular ("life as ...") does not."""
    assert ("jonas", "job", "project architect", False) in said(
        "Guess who's a project architect now."
    )
    first_day = said("Monday was my first day as a paralegal at Ege Lojistik.")
    assert {("jonas", "job", "paralegal", False), ("jonas", EMPLOYER, "Ege Lojistik", False)} <= (
        first_day
    )
    assert not said("Welcome to life as an associate at Aksoy & Partners.")
    assert not said("Was your first day as a paralegal at Ege Lojistik good?")


def test_a_dwelling_found_in_a_place_and_a_condition() -> None:
    """The parse may hang the place on the verb ("found [a flat] [in Frederiksbjerg]"):
    still the home. A present condition states nothing; a past "when" does."""
    assert ("jonas", HOME, "Frederiksbjerg", False) in said("We found a flat in Frederiksbjerg.")
    assert not said("If I move to Cardiff, I'll tell you.")
    assert not said("When I can play more than three notes without squeaking.")
    assert ("jonas", HOME, "Cardiff", False) in said("When I moved to Cardiff, I cried.")
