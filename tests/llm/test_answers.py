"""The answer a free-text reply ends on."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from memstrata.llm.answers import final_answer, in_words
from memstrata.llm.salvage import Salvage
from memstrata.llm.types import LLMOutputError


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("Reasoning: the answer: Lisbon?\nNo.\nFinal answer: Porto", "Porto"),
        ("answer: first guess\nAnswer: second guess", "second guess"),
        ("## Answer: Porto", "Porto"),
        ("**Answer**: Porto **", "Porto"),
        ("I think it is Porto.", "I think it is Porto."),
        ("Some thinking.\n\nPorto\n\n", "Porto"),
        ("The answers: many\nPorto", "Porto"),  # "answers:" in a sentence is no label
        ("Answer:   \n", ""),
        ("", ""),
        ("   \n  ", ""),
    ],
)
def test_final_answer_reads_the_last_answer_line_else_the_last_line(
    reply: str, answer: str
) -> None:
    assert final_answer(reply) == answer


class _Short(BaseModel):
    answer: str = Field(max_length=20)


def test_in_words_reads_prose_into_the_answer_and_refuses_json_or_nothing() -> None:
    read = in_words(_Short)
    repairs = Salvage()
    assert read("Thinking it over.\nFinal answer: Porto", repairs).answer == "Porto"
    assert not repairs.reasons
    long = read("Answer: Porto, the second city of the north", repairs).answer
    assert long == "Porto, the second" and repairs.reasons == {"long_string": 1}
    for text in ('{"reply": "Porto"}', '[{"answer": 1}]', "Answer:", "  "):
        with pytest.raises(LLMOutputError):
            read(text, Salvage())


class _Cited(BaseModel):
    answer: str
    sources: list[str]


def test_in_words_refuses_a_schema_that_needs_more_than_the_answer() -> None:
    repairs = Salvage()
    with pytest.raises(LLMOutputError, match="_Cited"):
        in_words(_Cited)("Answer: Porto", repairs)
    assert not repairs.reasons
