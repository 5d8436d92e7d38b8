"""MemTree's prompts: Aggregate(c_v, c_new | n) of appendix A.1.2, and the answer prompt
of appendix A.2.2 ("Predicted Response Generation").

The wording follows the paper's prompts; each answer is a JSON object (``{"summary":
...}``, ``{"answer": ...}``) so a grammar-constrained local model closes it cleanly.
Prompt functions return ``(messages, model)``, as in the other designs.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from memstrata.llm.base import LLMClient
from memstrata.llm.fence import fence, noted
from memstrata.llm.schema import resized
from memstrata.llm.types import Message

#: the aggregate's stage. Its completion budget is the model's
#: (:mod:`memstrata.llm.budgets`): the paper gives none, but reports deep nodes near 800
#: tokens (A.3.6), so even the small profile's 1,024 leaves room for them. A reply the
#: limit cuts is asked again with twice the room; one cut again keeps its whole
#: sentences (the client's salvage), never a sentence's first half, and is counted
#: ``cut_off``.
STAGE = "memtree.aggregate"


class Summary(BaseModel):
    # A guard against a runaway reply, above what the small profile's budget can carry
    # (about 4 to 5 characters a token); a capable model's is larger
    # (``memtree.summary_chars``). The completion budget is the real bound.
    summary: str = Field(max_length=8000)


Prompt = tuple[list[Message], type[BaseModel]]

_SYSTEM = (
    "You will receive two pieces of information: New Information is detailed, and "
    "Existing Information is a summary from {n} previous entries. Your task is to merge "
    "these into a single, cohesive summary that highlights the most important insights.\n"
    "- Focus on the key points from both inputs.\n"
    "- Ensure the final summary combines the insights from both pieces of information.\n"
    "- If the number of previous entries in Existing Information is accumulating (more "
    "than 2), focus on summarizing more concisely, only capturing the overarching theme, "
    "and getting more abstract in your summary.\n"
    'Output the summary directly, as JSON: {{"summary": "..."}}.'
)


def aggregate(current: str, new: str, n: int) -> Prompt:
    """Merge a node's content (summarizing ``n`` entries) with the new information."""
    user = (
        f"[New Information]\n{fence(new)}\n\n"
        f"[Existing Information (from {n} previous entries)]\n{fence(current)}\n\n"
        "[Output Summary]"
    )
    return [
        Message(role="system", content=noted(_SYSTEM.format(n=n))),
        Message(role="user", content=user),
    ], Summary


async def llm_aggregate(llm: LLMClient, current: str, new: str, n: int) -> str:
    """One aggregate call; raises the client's error when the model fails."""
    messages, model = aggregate(current, new, n)
    model = resized(model, {"summary": llm.budgets.bound("memtree.summary_chars")})
    answer = await llm.structured(
        messages, model, stage=STAGE, max_tokens=llm.budgets.tokens(STAGE)
    )
    assert isinstance(answer, Summary)
    text = answer.summary.strip()
    if not text:
        raise ValueError("the aggregate came back empty")
    return text


ANSWER_STAGE = "memtree.answer"


class ShortAnswer(BaseModel):
    answer: str = Field(max_length=2000)


def answer(question: str, results: list[str]) -> Prompt:
    """A.2.2: a short answer from the search results only (some may be irrelevant)."""
    listed = "\n\n".join(results)
    user = (
        "Write a high-quality short answer for the given question using only the provided "
        "search results (some of which might be irrelevant).\n\n"
        f"[ Question ]\n{question}\n\n"
        f"[ Search Results ]\n{fence(listed)}\n\n"
        "[ Output ]\n"
        'Reply with JSON: {"answer": "..."}.'
    )
    return [Message(role="user", content=noted(user))], ShortAnswer
