"""What a free-text reply answers: the line it ends on, not the reasoning before it.

A model asked for JSON sometimes writes prose instead ("Let me think ... Final answer:
Porto"), and the reasoning may itself say "answer:" or quote a brace. The answer is what
follows the reply's *last* "Answer:" line (a "Final answer:" or a markdown-bold one
too); without one, the reply's last non-empty line. :func:`in_words` reads such a reply
into a one-answer schema, as the ``fallback`` of ``LLMClient.structured``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

from memstrata.llm.salvage import Salvage, salvage
from memstrata.llm.schema import repair_json
from memstrata.llm.types import LLMOutputError

T = TypeVar("T", bound=BaseModel)

#: a line that starts with "Answer:" or "Final answer:" (markdown marks before it allowed)
ANSWER_LINE = re.compile(r"(?:^|\n)[ \t*#]*(?:final\s+)?answer\s*\**\s*:\**", re.IGNORECASE)


def final_answer(text: str) -> str:
    """The answer of a free-text reply: after its last answer line, else its last
    non-empty line; "" for a blank reply or an answer line with nothing after it."""
    marks = list(ANSWER_LINE.finditer(text))
    if marks:  # an answer line with nothing after it answers nothing
        return text[marks[-1].end() :].strip().strip("* ").strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def in_words(model: type[T], field: str = "answer") -> Callable[[str, Salvage], T]:
    """A reader of a reply written in words where ``model``'s JSON was asked: its
    :func:`final_answer` as ``field`` (cut to the field's bound, counted). JSON the
    schema could not read (cut off, other fields) is not words and stays unreadable, as
    does a reply with no answer in it."""

    def read(text: str, repairs: Salvage) -> T:
        if _json(text):
            raise LLMOutputError(f"cannot read a {model.__name__} answer: JSON broke its schema")
        answer = final_answer(text)
        if not answer:
            raise LLMOutputError(f"cannot read a {model.__name__} answer: no answer in the reply")
        attempt = Salvage()
        try:
            value = salvage({field: answer}, model, attempt)
        except ValueError as exc:  # ValidationError and Unusable are ValueErrors
            raise LLMOutputError(f"cannot read a {model.__name__} answer: {exc}") from None
        repairs.merge(attempt)
        return value

    return read


def _json(text: str) -> bool:
    """The reply is JSON (perhaps cut off), not words that open with a bracket such as
    "[t3] Biscuit"."""
    if not text.lstrip().startswith(("{", "[")):
        return False
    try:
        repair_json(text)
    except LLMOutputError:
        return False
    return True
