"""The engine's own prompts: the grounded answer and the fusion reranker.

Each function returns ``(messages, model)``: the chat messages and the pydantic model the
reply must match. Designs keep their own prompts in their own package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, Field

from memstrata.llm.fence import fence, noted
from memstrata.llm.types import Message

NO_ANSWER = "NO_ANSWER"

Prompt = tuple[list[Message], type[BaseModel]]


class GroundedReply(BaseModel):
    answer: Annotated[str, Field(max_length=600)]
    sources: list[Annotated[str, Field(max_length=80)]] = Field(default_factory=list, max_length=8)


class Ranking(BaseModel):
    order: list[int] = Field(default_factory=list, max_length=40)


def grounded_answer(question: str, context: Sequence[tuple[str, str]]) -> Prompt:
    """``context``: (source ids, text) per item, best first."""
    listed = "\n".join(f"[{ids}] {text}" for ids, text in context)
    system = noted(
        "You answer questions from a memory of past conversations and documents. Use only "
        "the memory items given; each starts with the ids of the episodes it comes from in "
        "square brackets.\n"
        "- Answer briefly (a phrase or one sentence), in the question's language.\n"
        "- Resolve relative dates against the item's date when one is shown.\n"
        f'- If the items do not contain the answer, answer exactly "{NO_ANSWER}" and cite '
        "nothing. Do not guess.\n"
        '- "sources" lists the episode ids that support the answer.\n'
        'Reply JSON: {"answer": "...", "sources": ["id", ...]}'
    )
    user = f"Memory:\n{fence(listed) if listed else '(empty)'}\n\nQuestion: {question}"
    return [Message(role="system", content=system), Message(role="user", content=user)], (
        GroundedReply
    )


def rerank(query: str, kind: str, candidates: Sequence[str]) -> Prompt:
    listed = "\n".join(f"{i}: {c[:300]}" for i, c in enumerate(candidates))
    return [
        Message(
            role="system",
            content=noted(
                f"Order the {kind} candidates by how much each helps answer the query, most "
                'helpful first. Reply JSON: {"order": [indexes]}.'
            ),
        ),
        Message(
            role="user", content=f"Query: {query}\n<CANDIDATES>\n{fence(listed)}\n</CANDIDATES>"
        ),
    ], Ranking
