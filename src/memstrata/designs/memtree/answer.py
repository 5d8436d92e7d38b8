"""MemTree's answerer: the paper's answer prompt (appendix A.2.2) over the hits.

The hits (leaves as their episodes or chunks, inner nodes as summaries) are the "search
results", in the route's order; the model writes a short answer from them only. The
paper's prompt has no way to say "not in memory", so an answer abstains only when the
model writes nothing. It cites every episode behind the hits it was shown (the prompt
asks for no citations). Without an LLM, the engine's extractive answer stands in.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from memstrata.designs.memtree import prompts
from memstrata.engine.answer import GroundedAnswerer, usage_of
from memstrata.engine.contracts import NOT_IN_MEMORY, Answer, Answerer, Context, QuestionInfo
from memstrata.llm.answers import in_words
from memstrata.llm.types import MemoryUsageSink
from memstrata.models import Hit


class MemTreeAnswerParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_items: int = Field(default=10, ge=1, description="search results shown")
    max_chars: int = Field(
        default=4000, ge=100, description="characters of each result (deep summaries are long)"
    )
    max_tokens: int | None = Field(
        default=None,
        ge=16,
        description="completion budget of the answer; default: the model's (memtree.answer)",
    )


class MemTreeAnswerer(Answerer[MemTreeAnswerParams]):
    name = "memtree"
    Params = MemTreeAnswerParams

    async def answer(
        self,
        ctx: Context,
        namespace: str,
        question: str,
        hits: list[Hit],
        about: QuestionInfo | None = None,
    ) -> Answer:
        p = self.params
        if ctx.llm is None or not hits:
            grounded = GroundedAnswerer()  # the engine's own extract
            return await grounded.answer(ctx, namespace, question, hits, about)
        shown = hits[: p.max_items]
        messages, model = prompts.answer(question, [h.text[: p.max_chars] for h in shown])
        tally = MemoryUsageSink()
        llm = ctx.llm.scoped(namespace=namespace, usage=tally)
        reply = await llm.structured(
            messages,
            model,
            stage=prompts.ANSWER_STAGE,
            max_tokens=p.max_tokens or llm.budgets.tokens(prompts.ANSWER_STAGE),
            fallback=in_words(prompts.ShortAnswer),
        )
        assert isinstance(reply, prompts.ShortAnswer)
        text = reply.answer.strip()
        return Answer(
            question=question,
            text=text or NOT_IN_MEMORY,
            sources=list(dict.fromkeys(s for h in shown for s in h.sources)) if text else [],
            abstained=not text,
            usage=usage_of(tally),
            hits=shown,
        )
