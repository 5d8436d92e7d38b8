"""Other names of a conversation's two speakers, from how they address each other."""

from memstrata.retrieval.system1.aliases import speaker_named, unknown_names

SPEAKERS = ["Emi", "elise"]


def test_the_names_a_question_may_use_for_a_speaker() -> None:
    assert unknown_names("When did Kate's sister visit Elise in Rome?", SPEAKERS) == [
        "kate",
        "rome",
    ]
    assert unknown_names("what did emi cook?", SPEAKERS) == []


def test_a_name_said_to_one_speaker_is_theirs() -> None:
    turns = [
        ("elise", "Hey Kate! How was the class?"),
        ("Emi", "Good! We made pasta."),
        ("elise", "That is so true, Kate!"),
        ("elise", "What about you Kate?"),
        ("Emi", "Haha, I'm Kate by the way."),
    ]
    assert speaker_named("kate", turns, SPEAKERS) == "Emi"


def test_a_place_after_a_comma_is_no_one_addressed() -> None:
    turns = [
        ("elise", "I'm from Houston, Texas."),
        ("elise", "A cathedral in Houston, Texas."),
        ("elise", "A yacht trip near Galveston, Texas!"),
    ]
    assert speaker_named("texas", turns, SPEAKERS) is None


def test_one_greeting_is_not_enough() -> None:
    assert speaker_named("kate", [("elise", "Hi Kate!")], SPEAKERS) is None


def test_a_name_its_bearer_also_speaks_of_belongs_to_someone_else() -> None:
    # letters drafted for the user open with "Hi Kelly," and the user writes of Kelly
    turns = [
        ("assistant", "Here is a draft: Hi Kelly, thanks for the club invite."),
        ("assistant", "Dear Kelly, I would love to join."),
        ("assistant", "Thank you Kelly, see you on Monday."),
        ("user", "I met Kelly at the library book club."),
    ]
    assert speaker_named("kelly", turns, ["assistant", "user"]) is None
    assert speaker_named("kelly", turns[:3], ["assistant", "user"]) == "user"


def test_i_am_with_a_small_letter_introduces_no_one() -> None:
    turns = [("Emi", "I'm considering a trip."), ("Emi", "I am considering it.")] * 2
    assert speaker_named("considering", turns, SPEAKERS) is None


def test_only_two_person_chats_learn_names() -> None:
    turns = [("elise", "Hey Kate!"), ("elise", "Thanks, Kate!"), ("elise", "Hi Kate")]
    assert speaker_named("kate", turns, ["Emi", "elise", "Ana"]) is None
