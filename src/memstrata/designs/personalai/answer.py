"""The QA generator (appendix C, Table 10): an answer from the filtered triplets, or an
abstention (the model's ``<NotEnoughtInfo>``, read as ``abstained``: the answer then
says :data:`~memstrata.engine.contracts.NOT_IN_MEMORY`, as every design's does).

The contexts are the hits' texts, triplets and theses before episodes in the fused
recipes (the paper conditions on triplets; episodes are the episodic "triplets"); in
``personalai-paper`` the hits as they come, which are the triplets filter's items in its
order, each whole, in Table 10's own words (``prompts = "paper"``). Without an LLM the
answer is the engine's extract of the contexts' episodes (``extractive``), abstaining
when their support is weak.

A model whose reply cannot be read even after the retry (JSON without an answer, an empty
reply) has not answered; the question still has its contexts, so the answer is their
extract, marked ``extractive`` and counted as ``unusable_replies`` in its usage (the
paper is silent; raising would throw the retrieval away).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memstrata.designs.personalai.prompts import Output, QAAnswer, Style, qa
from memstrata.designs.personalai.replies import ask
from memstrata.engine.answer import usage_of
from memstrata.engine.contracts import NOT_IN_MEMORY, Answer, Answerer, Context, QuestionInfo
from memstrata.engine.extractive import extract_answer
from memstrata.llm.types import LLMOutputError, MemoryUsageSink
from memstrata.models import Hit

STAGE = "personalai.qa"

logger = logging.getLogger("memstrata.personalai")


class QAParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: contexts shown to the model; None: every hit
    max_items: int | None = Field(default=30, ge=1)
    #: characters of each context; None: whole
    max_chars: int | None = Field(default=500, ge=50)
    output: Output = "json"
    #: the reply's completion budget, chain of thought and answer; default: the model's
    #: (``personalai.qa``, :mod:`memstrata.llm.budgets`)
    max_tokens: int | None = Field(default=None, ge=32)
    #: the prompt's wording: ours, or Table 10's text (which needs ``output = "lines"``)
    prompts: Style = "ours"
    #: the contexts' order: triplets and theses before episodes (ours), or the hits'
    #: own order (the filter's, in ``personalai-paper``)
    order: Literal["triplets_first", "hits"] = "triplets_first"

    @model_validator(mode="after")
    def _paper_lines(self) -> QAParams:
        if self.prompts == "paper" and self.output != "lines":
            raise ValueError('Table 10 asks for its line format: output = "lines"')
        return self


def contexts(hits: list[Hit], p: QAParams) -> list[Hit]:
    if p.order == "triplets_first":
        first = [h for h in hits if h.kind != "episode"]
        hits = first + [h for h in hits if h.kind == "episode"]
    return hits[: p.max_items]


class PersonalAIAnswerer(Answerer[QAParams]):
    name = "personalai-qa"
    Params = QAParams

    async def answer(
        self,
        ctx: Context,
        namespace: str,
        question: str,
        hits: list[Hit],
        about: QuestionInfo | None = None,
    ) -> Answer:
        p = self.params
        shown = contexts(hits, p)
        if ctx.llm is None:
            return await asyncio.to_thread(self._extractive, ctx, namespace, question, shown)
        tally = MemoryUsageSink()
        llm = ctx.llm.scoped(namespace=namespace, usage=tally)
        prompt = qa(question, [h.text[: p.max_chars] for h in shown], p.output, p.prompts)
        try:
            budget = p.max_tokens or llm.budgets.tokens(STAGE)
            reply = await ask(llm, prompt, QAAnswer, p.output, STAGE, budget)
        except LLMOutputError as exc:
            logger.warning("unusable QA reply, answering from the contexts: %s", exc)
            answer = await asyncio.to_thread(self._extractive, ctx, namespace, question, shown)
            usage = {**usage_of(tally), "unusable_replies": 1}
            return answer.model_copy(update={"usage": usage})
        usage = usage_of(tally)
        if reply.abstained or not reply.answer.strip():
            return Answer(
                question=question, text=NOT_IN_MEMORY, abstained=True, usage=usage, hits=shown
            )
        sources = list(dict.fromkeys(s for h in shown for s in h.sources))
        return Answer(
            question=question, text=reply.answer.strip(), sources=sources, usage=usage, hits=shown
        )

    def _extractive(self, ctx: Context, namespace: str, question: str, shown: list[Hit]) -> Answer:
        """The engine's honest extract of the contexts' episodes (it abstains when the
        evidence is weak)."""
        return extract_answer(
            ctx,
            namespace,
            question,
            shown,
            max_items=self.params.max_items or len(shown),
            max_sentences=2,
        )
