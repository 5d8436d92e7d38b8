"""The HiGMem answerer (appendix C, final QA): category-aware short answers over the final
evidence set.

The question's kind picks the instruction: a *temporal* question (when, what date, how
long ago) is answered with a date inferred from the dialogue timeline; an *adversarial*
one, when the caller gives the distractor answer, chooses between it and "Not mentioned in
the conversation"; any other gets a short phrase in the turns' own words, with "Not
mentioned in the conversation" as the way to abstain. ``ask`` has no category, so the
kind is read off the question (:func:`question_kind`); an evaluation passes the data
set's category and, for an adversarial question, its trap answer
(:class:`~memstrata.engine.contracts.QuestionInfo`, ``bench qa`` does);
:meth:`HiGMemAnswerer.answer_as` takes the kind explicitly.

Without an LLM: a temporal question gets the engine's extract of its best sentence
headed by the date that turn is about (its resolved date phrase, else the turn's own
date); other questions get the generic extractive answer. Both abstain when the
evidence is weak.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from memstrata.designs.higmem import prompts
from memstrata.designs.higmem.builder import layer_cache
from memstrata.designs.higmem.layer import BUILDER, PAPER_BUILDER
from memstrata.engine.answer import GroundedAnswerer, GroundedParams
from memstrata.engine.contracts import NOT_IN_MEMORY, Answer, Answerer, Context, QuestionInfo
from memstrata.engine.extractive import extract_answer
from memstrata.llm.answers import in_words
from memstrata.llm.types import MemoryUsageSink
from memstrata.models import Hit

_TEMPORAL = re.compile(
    r"^\s*(when\b|what (date|year|month|day|time)\b|which (date|year|month|day)\b|"
    r"how long ago\b|in which (year|month)\b)",
    re.I,
)


#: tokens of the answer prompt that are not evidence (instructions, question, reply)
ANSWER_ROOM = 1000


def _within(lines: list[str], tokens: int) -> list[str]:
    """The evidence lines, in order, that fit ``tokens`` of the model's context (three
    characters a token, as the route counts): a whole turn or none of it."""
    out, used = [], 0
    for line in lines:
        used += len(line) + 1
        if used > max(tokens, 0) * 3:
            break
        out.append(line)
    return out


def question_kind(question: str) -> prompts.QuestionKind:
    return "temporal" if _TEMPORAL.search(question) else "short"


class HiGMemAnswerParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_items: int | None = Field(
        default=30,
        ge=1,
        description="evidence turns shown to the model (the filter reads 30; None: the "
        "whole evidence set, as far as the model's context holds it)",
    )
    max_chars: int | None = Field(
        default=400, ge=50, description="characters of each turn shown (None: whole turns)"
    )
    prompts: Literal["ours", "paper"] = Field(
        default="ours",
        description="llm: our answer prompt (with an abstain option), or appendix C's",
    )


class HiGMemAnswerer(Answerer[HiGMemAnswerParams]):
    name = "higmem"
    Params = HiGMemAnswerParams
    #: the builder whose turn notes (resolved dates) the answer reads
    builder: ClassVar[str] = BUILDER

    async def answer(
        self,
        ctx: Context,
        namespace: str,
        question: str,
        hits: list[Hit],
        about: QuestionInfo | None = None,
    ) -> Answer:
        kind = question_kind(question)
        if about is not None and about.category == "temporal":
            kind = "temporal"
        elif about is not None and about.category == "adversarial" and about.candidate:
            return await self.answer_as(
                ctx, namespace, question, hits, "adversarial", about.candidate
            )
        return await self.answer_as(ctx, namespace, question, hits, kind)

    async def answer_as(
        self,
        ctx: Context,
        namespace: str,
        question: str,
        hits: list[Hit],
        kind: prompts.QuestionKind,
        candidate: str | None = None,
    ) -> Answer:
        """``kind`` "adversarial" needs the distractor ``candidate``."""
        if kind == "adversarial" and not candidate:
            raise ValueError("an adversarial question needs the candidate answer")
        shown = [h for h in hits if h.kind == "episode"][: self.params.max_items]
        if ctx.llm is None:
            if kind != "temporal" or not shown:
                grounded = GroundedAnswerer(GroundedParams(max_items=max(1, len(shown))))
                return await grounded.answer(ctx, namespace, question, shown)
            return await asyncio.to_thread(self._dated, ctx, namespace, question, shown)
        lines = await asyncio.to_thread(self._lines, ctx, namespace, shown)
        if self.params.prompts == "paper":
            lines = _within(lines, ctx.llm.budgets.context_tokens - ANSWER_ROOM)
            messages, model = prompts.paper_final_answer(question, lines, kind, candidate)
        else:
            messages, model = prompts.final_answer(question, lines, kind, candidate)
        tally = MemoryUsageSink()
        llm = ctx.llm.scoped(namespace=namespace, usage=tally)
        reply = await llm.structured(
            messages,
            model,
            stage=prompts.STAGES["answer"],
            max_tokens=llm.budgets.tokens(prompts.STAGES["answer"]),
            fallback=in_words(prompts.FinalAnswer),
        )
        assert isinstance(reply, prompts.FinalAnswer)
        text = reply.answer.strip()
        abstained = not text or text.rstrip(". ").casefold() == prompts.NOT_MENTIONED.casefold()
        recs = tally.records
        return Answer(
            question=question,
            text=NOT_IN_MEMORY if abstained else text,
            sources=[] if abstained else [s for h in shown for s in h.sources],
            abstained=abstained,
            usage={
                "calls": len(recs),
                "prompt_tokens": sum(r.prompt_tokens for r in recs),
                "completion_tokens": sum(r.completion_tokens for r in recs),
            },
            hits=shown,
        )

    def _lines(self, ctx: Context, namespace: str, hits: list[Hit]) -> list[str]:
        """The evidence in time order (by the turns' stored times; undated turns after
        them, in rank order), each turn with its resolved date phrases."""
        lay = layer_cache(ctx).get(self.builder, namespace)
        episodes = {ep.id: ep for ep in ctx.store.get_episodes(namespace, [h.id for h in hits])}

        def when(rank: int) -> tuple[bool, datetime, int]:
            ep = episodes.get(hits[rank].id)
            at = ep.occurred_at if ep is not None else None
            if at is not None and at.tzinfo is None:
                at = at.replace(tzinfo=UTC)
            return (at is None, at or datetime.min.replace(tzinfo=UTC), rank)

        out = []
        for rank in sorted(range(len(hits)), key=when):
            h = hits[rank]
            note = lay.notes.get(h.id) if self.params.prompts == "ours" else None
            extra = "; ".join(f"{d['phrase']} = {d['date']}" for d in note.dates) if note else ""
            text = h.text if self.params.max_chars is None else h.text[: self.params.max_chars]
            out.append(text + (f" ({extra})" if extra else ""))
        return out

    def _dated(self, ctx: Context, namespace: str, question: str, hits: list[Hit]) -> Answer:
        """A temporal question without an LLM: the engine's extract (its best sentence,
        or its abstention), headed by the date that turn is about: its resolved date
        phrase, else the turn's own date."""
        quoted = extract_answer(
            ctx, namespace, question, hits, max_items=max(1, len(hits)), max_sentences=1
        )
        if quoted.abstained or not quoted.sources:
            return quoted
        turn = quoted.sources[0]
        note = layer_cache(ctx).get(self.builder, namespace).notes.get(turn)
        if note is not None and note.dates:
            date = f"{note.dates[0]['date']} ({note.dates[0]['phrase']})"
        else:
            (ep,) = ctx.store.get_episodes(namespace, [turn])
            date = ep.occurred_at.date().isoformat() if ep.occurred_at else "unknown date"
        return quoted.model_copy(update={"text": f"{date}: {quoted.text}"})


class PaperAnswerer(HiGMemAnswerer):
    """The same answer stage over the turn notes of the builder ``higmem-paper``; the
    ``higmem-paper`` recipe sets appendix C's prompt (:data:`~.recipe.PAPER_ANSWER`)."""

    name = "higmem-paper"
    builder = PAPER_BUILDER
