"""The generic answer stage, ``grounded``: every recipe has it unless it names its own.

* With an LLM: the hits are shown with the episode ids they rest on, and the model answers
  from them only, citing ids, or says :data:`~memstrata.engine.prompts.NO_ANSWER`, which
  becomes ``abstained=True`` (the answer then says
  :data:`~memstrata.engine.contracts.NOT_IN_MEMORY`). Cited ids that are not among the
  hits' sources are dropped, so an answer never cites something it was not given. A
  reply in words instead of the JSON is read by its final answer line, citing the ids it
  names in square brackets (:func:`memstrata.llm.answers.in_words`); a JSON reply that
  breaks the schema is asked again once and then raises.
* Without one: an honest extract (:mod:`memstrata.engine.extractive`): the sentences of
  the hits' episodes that best support the question, each once, with its date and
  speaker, marked ``extractive``; "Not in memory." (abstained) when the evidence is weak.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from memstrata.engine.contracts import NOT_IN_MEMORY, Answer, Answerer, Context, QuestionInfo
from memstrata.engine.extractive import MIN_SUPPORT, SPEAKER_GAP, extract_answer
from memstrata.engine.prompts import NO_ANSWER, GroundedReply, grounded_answer
from memstrata.llm.answers import in_words
from memstrata.llm.salvage import Salvage
from memstrata.llm.types import LLMError, MemoryUsageSink
from memstrata.models import Hit


class GroundedParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_items: int = Field(default=20, ge=1, description="hits shown to the model")
    max_chars: int | None = Field(
        default=None,
        ge=50,
        description="characters of each hit shown; default: the model's (answer.hit_chars)",
    )
    sentences: int = Field(default=2, ge=1, description="extractive: sentences returned")
    min_support: float = Field(
        default=MIN_SUPPORT, description="extractive: abstain below this support"
    )
    speaker_gap: float = Field(
        default=SPEAKER_GAP,
        description="extractive: abstain when another speaker's sentence supports a "
        "question naming someone better than theirs, by more than this",
    )
    max_tokens: int | None = Field(
        default=None,
        ge=16,
        description="completion budget of the reply; default: the model's (answer.grounded)",
    )


class GroundedAnswerer(Answerer[GroundedParams]):
    name = "grounded"
    Params = GroundedParams

    async def answer(
        self,
        ctx: Context,
        namespace: str,
        question: str,
        hits: list[Hit],
        about: QuestionInfo | None = None,
    ) -> Answer:
        p = self.params
        if ctx.llm is None:
            return await asyncio.to_thread(self._extractive, ctx, namespace, question, hits)
        if not hits:  # nothing to ground an answer in: no call, the same as extractive
            return Answer(question=question, text=NOT_IN_MEMORY, abstained=True)
        shown = hits[: p.max_items]
        tally = MemoryUsageSink()
        llm = ctx.llm.scoped(namespace=namespace, usage=tally)
        chars = p.max_chars or llm.budgets.bound("answer.hit_chars")
        context = [(", ".join(h.sources[:5]), h.text[:chars]) for h in shown]
        messages, model = grounded_answer(question, context)
        try:
            reply = await llm.structured(
                messages,
                model,
                stage="answer.grounded",
                max_tokens=p.max_tokens or llm.budgets.tokens("answer.grounded"),
                fallback=_in_words({s for h in shown for s in h.sources}),
            )
        finally:
            usage = usage_of(tally)
        assert isinstance(reply, GroundedReply)
        text = reply.answer.strip()
        abstained = _says_no_answer(text)
        allowed = {s for h in shown for s in h.sources}
        # Ids are shown as "[a, b]"; a model may copy them that way.
        named = (i.strip() for x in reply.sources for i in x.strip("[] ").split(","))
        cited = [s for s in dict.fromkeys(named) if s in allowed]
        return Answer(
            question=question,
            text=NOT_IN_MEMORY if abstained else text,
            sources=[] if abstained else cited,
            abstained=abstained,
            usage=usage,
            hits=shown,
        )

    def _extractive(self, ctx: Context, namespace: str, question: str, hits: list[Hit]) -> Answer:
        p = self.params
        return extract_answer(
            ctx,
            namespace,
            question,
            hits,
            max_items=p.max_items,
            max_sentences=p.sentences,
            min_support=p.min_support,
            speaker_gap=p.speaker_gap,
        )


#: a group of ids in square brackets, as the items are shown to the model
_CITED = re.compile(r"\s*\[([^\[\]\n]{1,400})\]")


def _in_words(allowed: set[str]) -> Callable[[str, Salvage], GroundedReply]:
    """A reply written in words: its final answer line as the answer, the bracketed
    groups of shown ids anywhere in it as its sources (and out of the answer's text)."""
    read = in_words(GroundedReply)

    def parse(text: str, repairs: Salvage) -> GroundedReply:
        reply = read(text, repairs)

        def ids(group: str) -> list[str]:
            named = [i.strip() for i in group.split(",")]
            return named if named and all(i in allowed for i in named) else []

        cited = [i for m in _CITED.finditer(text) for i in ids(m.group(1))]
        answer = _CITED.sub(lambda m: "" if ids(m.group(1)) else m.group(0), reply.answer)
        return GroundedReply(answer=answer.strip(), sources=list(dict.fromkeys(cited))[:8])

    return parse


def _says_no_answer(text: str) -> bool:
    """The reply abstains: it is empty, holds the marker (any case), or is nothing but the
    marker written loosely ("No answer.", "no-answer"). An answer that merely contains the
    words ("She got no answer from the bank.") is an answer."""
    if not text or NO_ANSWER in text.upper():
        return True
    loose = re.sub(r"[\s-]+", "_", text.strip(" \t\n.!\"'`*")).upper()
    return loose == NO_ANSWER


def usage_of(tally: MemoryUsageSink) -> dict[str, int]:
    """Calls and tokens of an answer's LLM calls, as ``Answer.usage`` reports them."""
    recs = tally.records
    return {
        "calls": len(recs),
        "prompt_tokens": sum(r.prompt_tokens for r in recs),
        "completion_tokens": sum(r.completion_tokens for r in recs),
    }


__all__ = ["GroundedAnswerer", "GroundedParams", "LLMError", "usage_of"]
