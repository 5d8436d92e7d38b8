"""MemTree's answerer: the paper's answer prompt (appendix A.2.2) over the hits.

The hits (leaves as their episodes or chunks, inner nodes as summaries) are the "search
results", in the route's order; the model writes a short answer from them only. The
paper's prompt has no way to say "not in memory", so an answer abstains only when the
model writes nothing. It cites every episode behind the hits it was shown (the prompt
asks for no citations). Without an LLM, the engine's extractive answer stands in.

Two ways of filling the results: ours (``memtree``), at most ``max_items`` results of at
most ``max_chars`` characters each; the paper's (``memtree-paper``, A.1.4: "top k = 10
... with a context length of 8192 tokens"), the results in order, whole, while they fit
in ``context_tokens``, the one that crosses the limit cut to the room left. The room is
never more than the model's window leaves beside the prompt and the reply.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memstrata.designs.memtree import prompts
from memstrata.engine.answer import GroundedAnswerer, usage_of
from memstrata.engine.contracts import NOT_IN_MEMORY, Answer, Answerer, Context, QuestionInfo
from memstrata.llm.answers import in_words
from memstrata.llm.base import LLMClient
from memstrata.llm.types import MemoryUsageSink
from memstrata.models import Hit
from memstrata.retrieval.context import count_tokens, truncate_tokens

#: A.1.4's context length for MSC-E, MultiHop RAG and QuALITY
PAPER_CONTEXT_TOKENS = 8192
#: the share of the model's window the results may take at most, beside the prompt and
#: the reply: tokens are counted with the bundled MiniLM tokenizer, which runs within
#: about 10% of the answer model's
WINDOW_SHARE = 0.9


class MemTreeAnswerParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_items: int = Field(default=10, ge=1, description="search results shown")
    max_chars: int | None = Field(
        default=4000,
        ge=100,
        description="characters of each result (deep summaries are long); None: whole",
    )
    context_tokens: int | None = Field(
        default=None,
        ge=16,
        description="results filled in order up to this many tokens, the last one cut "
        "(A.1.4: 8,192); None: no token limit but max_items and max_chars",
    )
    prompt: Literal["ours", "paper"] = Field(
        default="ours",
        description="our A.2.2 prompt (JSON reply) or the appendix's text as printed "
        "(plain-text reply)",
    )
    max_tokens: int | None = Field(
        default=None,
        ge=16,
        description="completion budget of the answer; default: the model's (memtree.answer)",
    )


class MemTreePaperAnswerParams(MemTreeAnswerParams):
    """A.1.4 and A.2.2: ten results, whole, within 8,192 tokens; the prompt as printed."""

    max_chars: int | None = Field(default=None, ge=100)
    context_tokens: int | None = Field(default=PAPER_CONTEXT_TOKENS, ge=16)
    prompt: Literal["ours", "paper"] = "paper"


def fill(texts: list[str], room: int) -> list[str]:
    """``texts`` in order while their tokens total at most ``room``; the first that
    crosses it cut to what is left (when anything is), the rest left out."""
    out: list[str] = []
    for text in texts:
        if room <= 0:
            break
        cost = count_tokens(text)
        if cost > room:
            out.append(truncate_tokens(text, room))
            break
        out.append(text)
        room -= cost
    return out


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
        tally = MemoryUsageSink()
        llm = ctx.llm.scoped(namespace=namespace, usage=tally)
        budget = p.max_tokens or llm.budgets.tokens(prompts.ANSWER_STAGE)
        shown = hits[: p.max_items]
        results = [h.text if p.max_chars is None else h.text[: p.max_chars] for h in shown]
        if p.context_tokens is not None:
            results = fill(results, self.room(llm, question, budget))
            shown = shown[: len(results)]
        if p.prompt == "paper":
            messages, _ = prompts.paper_answer(question, results)
            reply: BaseModel = await llm.read(
                messages, prompts.read_paper_answer, stage=prompts.ANSWER_STAGE, max_tokens=budget
            )
        else:
            messages, model = prompts.answer(question, results)
            reply = await llm.structured(
                messages,
                model,
                stage=prompts.ANSWER_STAGE,
                max_tokens=budget,
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

    def room(self, llm: LLMClient, question: str, reply: int) -> int:
        """Tokens the results may take: ``context_tokens``, within what the model's window
        leaves beside the prompt's own words and the reply's budget."""
        assert self.params.context_tokens is not None
        ask = prompts.paper_answer if self.params.prompt == "paper" else prompts.answer
        messages, _ = ask(question, [])
        words = sum(count_tokens(m.content) for m in messages)
        window = int(WINDOW_SHARE * (llm.budgets.context_tokens - reply)) - words
        return max(0, min(self.params.context_tokens, window))


class MemTreePaperAnswerer(MemTreeAnswerer):
    """The paper's answer stage (``memtree-paper``): A.2.2 as printed over the results in
    order within A.1.4's 8,192 tokens."""

    name = "memtree-paper"
    Params = MemTreePaperAnswerParams
