"""The QA generator (appendix C, Table 10): an answer from the filtered triplets, or the
``<NotEnoughtInfo>`` abstention.

The contexts are the hits' texts in order, triplets and theses before episodes (the
paper conditions on triplets; episodes are the episodic "triplets"). Without an LLM the
answer is the engine's extract of the contexts' episodes (``extractive``), abstaining
with ``<NotEnoughtInfo>`` when their support is weak.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, ConfigDict, Field

from memstrata.designs.personalai.prompts import NOT_ENOUGH, Output, QAAnswer, ask, qa
from memstrata.engine.contracts import Answer, Answerer, Context, QuestionInfo
from memstrata.engine.extractive import extract_answer
from memstrata.llm.types import MemoryUsageSink
from memstrata.models import Hit

STAGE = "personalai.qa"


class QAParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_items: int = Field(default=30, ge=1, description="contexts shown to the model")
    max_chars: int = Field(default=500, ge=50, description="characters of each context")
    output: Output = "json"
    max_tokens: int = Field(default=400, ge=32)


def contexts(hits: list[Hit], p: QAParams) -> list[Hit]:
    first = [h for h in hits if h.kind != "episode"]
    return (first + [h for h in hits if h.kind == "episode"])[: p.max_items]


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
        prompt = qa(question, [h.text[: p.max_chars] for h in shown], p.output)
        reply = await ask(llm, prompt, QAAnswer, p.output, STAGE, p.max_tokens)
        usage = {
            "calls": len(tally.records),
            "prompt_tokens": sum(r.prompt_tokens for r in tally.records),
            "completion_tokens": sum(r.completion_tokens for r in tally.records),
        }
        if reply.abstained or not reply.answer.strip():
            return Answer(
                question=question, text=NOT_ENOUGH, abstained=True, usage=usage, hits=shown
            )
        sources = list(dict.fromkeys(s for h in shown for s in h.sources))
        return Answer(
            question=question, text=reply.answer.strip(), sources=sources, usage=usage, hits=shown
        )

    def _extractive(self, ctx: Context, namespace: str, question: str, shown: list[Hit]) -> Answer:
        """The engine's honest extract of the contexts' episodes, abstaining the paper's
        way when the evidence is weak."""
        answer = extract_answer(
            ctx,
            namespace,
            question,
            shown,
            max_items=self.params.max_items,
            max_sentences=2,
        )
        return answer.model_copy(update={"text": NOT_ENOUGH}) if answer.abstained else answer
