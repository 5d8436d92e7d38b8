"""Standing instructions and requests for advice, read without a model."""

import pytest

from memstrata.retrieval.system1.standing import asks_advice, by_asker, first_person, instructs


@pytest.mark.parametrize(
    "text",
    [
        "Always format dates in MM/DD/YYYY when I ask about scheduling details.",
        "Thanks! Please never use tables in my reports.",
        "From now on, always answer me in French.",
        "Never suggest recipes with nuts whenever we plan dinners.",
        "Always écris-moi en français when I ask about my trips.",  # a letter beyond ASCII
    ],
)
def test_a_rule_about_the_speakers_requests_is_an_instruction(text: str) -> None:
    assert instructs(text)


@pytest.mark.parametrize(
    "text",
    [
        "Always happy to help!",  # not an imperative about the speaker's requests
        "I always format dates by hand when I write letters.",  # a habit, not a rule
        "Never mind, the trip went fine.",
        "She said you should always check the oil before a long drive.",
        "",
    ],
)
def test_habits_maxims_and_reports_are_not_instructions(text: str) -> None:
    assert not instructs(text)


@pytest.mark.parametrize(
    "question",
    [
        "Can you suggest some good audiobooks for me to listen to?",
        "What tools or software would you suggest I use?",
        "How should I structure the final stages of the interview process?",
        "I'm planning to build a portfolio website. Where do I start?",
        "Any recommendations for a quiet place where I could write?",
        "Tips for my first marathon?",
    ],
)
def test_requests_for_guidance_ask_advice(question: str) -> None:
    assert asks_advice(question)


@pytest.mark.parametrize(
    "question",
    [
        "What did Caroline do at the support group?",
        "When did Melanie paint a sunrise?",
        "Which singer is American, Mark King or Nick Hexum?",
        "What advice does Caroline give for getting started with adoption?",
    ],
)
def test_questions_about_facts_do_not_ask_advice(question: str) -> None:
    assert not asks_advice(question)


def test_a_question_in_the_first_person_speaks_of_its_asker() -> None:
    assert first_person("When is my meeting at the studio?")
    assert first_person("I'm planning a trip. Where did I stay last time?")
    assert not first_person("When is Nora's meeting at the studio?")


def test_the_users_turns_are_known_by_role_or_by_speaker() -> None:
    assert by_asker("user", None)
    assert by_asker("user", "Nora")  # the role decides
    assert not by_asker("assistant", "user")
    assert by_asker(None, "User")  # a log without roles names the speaker after it
    assert by_asker(None, "human")
    assert not by_asker(None, "Nora") and not by_asker(None, None)
