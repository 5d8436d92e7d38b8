"""MemTree's prompts: Aggregate(c_v, c_new | n) of appendix A.1.2, and the answer prompt
of appendix A.2.2 ("Predicted Response Generation"), in two forms:

* ours (``memtree``): the paper's wording, each reply a JSON object (``{"summary":
  ...}``, ``{"answer": ...}``) so a grammar-constrained local model closes it cleanly;
* the paper's (``memtree-paper``, :func:`paper_aggregate`, :func:`paper_answer`): the
  appendix text as printed, read as plain text as the paper reads it. Stored text is
  fenced and the fence note is the one system line, as in every prompt here; those are
  the only differences (``tests/designs/memtree/test_memtree_paper_prompts.py`` diffs
  the rendered prompts against the appendix).

Prompt functions return ``(messages, model)``, as in the other designs; a plain-text
reply fills the model's one field.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from memstrata.llm.base import LLMClient
from memstrata.llm.fence import FENCE_NOTE, fence, noted
from memstrata.llm.salvage import shorten
from memstrata.llm.schema import resized
from memstrata.llm.types import LLMOutputError, Message

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


#: appendix A.1.2 as printed, one paragraph a line with a blank line between, as the
#: appendix lays it out; ``{n_children}`` is n = |C(v)| (section 3.1)
PAPER_AGGREGATE = (
    "You will receive two pieces of information: New Information is detailed, and "
    "Existing Information is a summary from {n_children} previous entries. Your task is to "
    "merge these into a single, cohesive summary that highlights the most important "
    "insights.\n\n"
    "- Focus on the key points from both inputs.\n\n"
    "- Ensure the final summary combines the insights from both pieces of information.\n\n"
    "- If the number of previous entries in Existing Information is accumulating (more "
    "than 2), focus on summarizing more concisely, only capturing the overarching theme, "
    "and getting more abstract in your summary.\n\n"
    "Output the summary directly.\n\n"
    "[New Information]\n\n{new_content}\n\n"
    "[Existing Information (from {n_children} previous entries)]\n\n{current_content}\n\n"
    "[ Output Summary ]"
)


def paper_aggregate(current: str, new: str, n: int) -> Prompt:
    """A.1.2 verbatim: the reply is the summary itself, in words."""
    user = PAPER_AGGREGATE.format(
        n_children=n, new_content=fence(new), current_content=fence(current)
    )
    return [
        Message(role="system", content=FENCE_NOTE),
        Message(role="user", content=user),
    ], Summary


def read_paper_summary(text: str) -> Summary:
    """A plain-text reply as the summary (its length guarded by the caller); an empty
    one is asked again once (the client's re-ask), then fails the call."""
    if not text.strip():
        raise LLMOutputError("the summary is empty", raw_text=text)
    return Summary.model_construct(summary=text.strip())


async def llm_aggregate(
    llm: LLMClient, current: str, new: str, n: int, *, paper: bool = False
) -> str:
    """One aggregate call, with our prompt or (``paper``) A.1.2's; raises the client's
    error when the model fails. A plain-text summary longer than the guard
    (``memtree.summary_chars``) is cut at its last sentence end within it."""
    bound = llm.budgets.bound("memtree.summary_chars")
    if paper:
        messages, _ = paper_aggregate(current, new, n)
        said = await llm.read(
            messages, read_paper_summary, stage=STAGE, max_tokens=llm.budgets.tokens(STAGE)
        )
        return shorten(said.summary, bound)
    messages, model = aggregate(current, new, n)
    model = resized(model, {"summary": bound})
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


#: appendix A.2.2 as printed (laid out as :data:`PAPER_AGGREGATE`)
PAPER_ANSWER = (
    "Write a high-quality short answer for the given question using only the provided "
    "search results (some of which might be irrelevant).\n\n"
    "[ Question ]\n\n{query}\n\n"
    "[ Search Results ]\n\n{retrieved_content}\n\n"
    "[ Output ]"
)


def paper_answer(question: str, results: list[str]) -> Prompt:
    """A.2.2 verbatim: the reply is the answer itself, in words."""
    user = PAPER_ANSWER.format(query=question, retrieved_content=fence("\n\n".join(results)))
    return [
        Message(role="system", content=FENCE_NOTE),
        Message(role="user", content=user),
    ], ShortAnswer


def read_paper_answer(text: str) -> ShortAnswer:
    """A plain-text reply as the answer; an empty one is an answer of nothing (the
    answerer abstains), not a failure."""
    return ShortAnswer.model_construct(answer=text.strip())
