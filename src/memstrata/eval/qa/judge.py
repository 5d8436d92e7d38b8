"""LLM judges: each paper's prompt turned into a 0/1 verdict per question.

The judge is a separate :class:`LLMClient` (its model is configurable: ``[eval.judge]``,
by default the ``[llm]`` section), so its calls, tokens and money are a stage of their
own, and its responses are cached like any other call: a rerun judges for free and gets
the same verdicts. A reply that never validates is recorded as a judge error for that
question (no verdict), not a crash of the run.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from memstrata.errors import InvalidInputError
from memstrata.eval.qa import prompts
from memstrata.eval.qa.cascade import cascade
from memstrata.eval.qa.prompts import BinaryVerdict, CorrectVerdict, LabelVerdict, ScoreVerdict
from memstrata.llm.base import LLMClient
from memstrata.llm.types import LLMError, Message

Prompt = Callable[[str, str, str], tuple[list[Message], type[BaseModel]]]

PROMPTS: dict[str, Prompt] = {
    "locomo": prompts.locomo_judge,
    "personalai": prompts.personalai_judge,
    "mindgraph": prompts.mindgraph_judge,
    "memtree": prompts.memtree_judge,
}


def parse_judges(text: str | None) -> list[str]:
    """``"locomo,mindgraph"`` → names; ``none`` or empty → no judge."""
    names = [n.strip() for n in (text or "").split(",") if n.strip()]
    if names in ([], ["none"]):
        return []
    unknown = [n for n in names if n not in PROMPTS]
    if unknown:
        raise InvalidInputError(
            f"unknown judge {unknown[0]!r}; choose from {', '.join(PROMPTS)} or none"
        )
    return list(dict.fromkeys(names))


def verdict(reply: BaseModel) -> float:
    if isinstance(reply, LabelVerdict):
        return float(reply.label == "CORRECT")
    if isinstance(reply, ScoreVerdict):
        return float(reply.score)
    if isinstance(reply, CorrectVerdict):
        return float(reply.correct)
    if isinstance(reply, BinaryVerdict):
        return float(reply.output)
    raise TypeError(f"not a verdict: {type(reply).__name__}")


async def judge(
    llm: LLMClient, name: str, question: str, gold: str, predicted: str
) -> tuple[float | None, str | None]:
    """(1.0 correct / 0.0 wrong, None) or (None, the error). The ``mindgraph`` judge
    first runs the paper's deterministic cascade: an answer it accepts is correct
    without a call."""
    if name == "mindgraph" and cascade(gold, predicted) is not None:
        return 1.0, None
    messages, model = PROMPTS[name](question, gold, predicted)
    try:
        reply = await llm.structured(
            messages, model, stage=f"judge.{name}", max_tokens=llm.budgets.tokens("judge")
        )
    except LLMError as exc:
        return None, f"{type(exc).__name__}: {exc}"[:300]
    return verdict(reply), None
