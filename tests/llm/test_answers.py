"""The answer a free-text reply ends on."""

from __future__ import annotations

import pytest

from memstrata.llm.answers import final_answer


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
