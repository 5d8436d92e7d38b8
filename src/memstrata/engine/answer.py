"""The generic answer stage, ``grounded``: every recipe has it unless it names its own.

* With an LLM: the hits are shown with the episode ids they rest on, and the model answers
  from them only, citing ids, or says :data:`~memstrata.engine.prompts.NO_ANSWER`, which
  becomes ``abstained=True``. Cited ids that are not among the hits' sources are dropped,
  so an answer never cites something it was not given.
* Without one: the best supporting sentences of the hits, each with its sources, marked
  ``extractive``. A sentence scores by its cosine to the question plus its share of the
  question's content terms; the answer abstains when there are no hits.
"""

from __future__ import annotations

import asyncio
import re

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memstrata.engine.contracts import Answer, Answerer, Context
from memstrata.engine.prompts import NO_ANSWER, GroundedReply, grounded_answer
from memstrata.llm.types import LLMError, MemoryUsageSink
from memstrata.models import Hit
from memstrata.retrieval.text import content_terms, sentences


class GroundedParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_items: int = Field(default=20, ge=1, description="hits shown to the model")
    max_chars: int = Field(default=600, ge=50, description="characters of each hit shown")
    sentences: int = Field(default=2, ge=1, description="extractive: sentences returned")
    max_tokens: int = Field(default=200, ge=16, description="completion budget of the reply")


class GroundedAnswerer(Answerer[GroundedParams]):
    name = "grounded"
    Params = GroundedParams

    async def answer(self, ctx: Context, namespace: str, question: str, hits: list[Hit]) -> Answer:
        p = self.params
        if ctx.llm is None:
            return await asyncio.to_thread(self._extractive, ctx, question, hits)
        if not hits:  # nothing to ground an answer in: no call, the same as extractive
            return Answer(question=question, text=NO_ANSWER, abstained=True)
        shown = hits[: p.max_items]
        context = [(", ".join(h.sources[:5]), h.text[: p.max_chars]) for h in shown]
        messages, model = grounded_answer(question, context)
        tally = MemoryUsageSink()
        llm = ctx.llm.scoped(namespace=namespace, usage=tally)
        try:
            reply = await llm.structured(
                messages, model, stage="answer.grounded", max_tokens=p.max_tokens
            )
        finally:
            usage = _usage(tally)
        assert isinstance(reply, GroundedReply)
        text = reply.answer.strip()
        abstained = _says_no_answer(text)
        allowed = {s for h in shown for s in h.sources}
        # Ids are shown as "[a, b]"; a model may copy them that way.
        named = (i.strip() for x in reply.sources for i in x.strip("[] ").split(","))
        cited = [s for s in dict.fromkeys(named) if s in allowed]
        return Answer(
            question=question,
            text=NO_ANSWER if abstained else text,
            sources=[] if abstained else cited,
            abstained=abstained,
            usage=usage,
            hits=shown,
        )

    def _extractive(self, ctx: Context, question: str, hits: list[Hit]) -> Answer:
        p = self.params
        if not hits:
            return Answer(question=question, text=NO_ANSWER, abstained=True, extractive=True)
        pieces: list[tuple[str, str, Hit]] = []  # (head, sentence, hit)
        for h in hits:
            head, body = _split_head(h)
            for start, end in sentences(body) or [(0, len(body))]:
                pieces.append((head, body[start:end], h))
        terms = set(content_terms(question))
        vecs = ctx.embedder.embed([question] + [sentence for _, sentence, _ in pieces])
        cos = vecs[1:] @ vecs[0]
        scores = []
        for i, (_, sentence, _) in enumerate(pieces):
            overlap = len(terms & set(content_terms(sentence))) / len(terms) if terms else 0.0
            scores.append(float(cos[i]) + overlap)
        best = np.argsort(-np.asarray(scores), kind="stable")[: p.sentences]
        chosen = [pieces[i] for i in sorted(best)]
        sources = list(dict.fromkeys(s for _, _, h in chosen for s in h.sources))
        return Answer(
            question=question,
            text=" ".join(head + sentence for head, sentence, _ in chosen),
            sources=sources,
            extractive=True,
            hits=hits,
        )


_HEAD = re.compile(r"^(\[[^\]\n]{1,40}\]\s*)?([^:\n]{1,60}:\s)?")


def _split_head(hit: Hit) -> tuple[str, str]:
    """An episode hit reads ``[date] speaker: text``; the head is kept for the quote but
    not scored, or every sentence would match the speaker's name in the question."""
    if hit.kind != "episode":
        return "", hit.text
    m = _HEAD.match(hit.text)
    speaker = hit.metadata.get("speaker")
    if m is None or not m.group(0) or (m.group(2) and m.group(2).strip()[:-1] != speaker):
        return "", hit.text
    return m.group(0), hit.text[m.end() :]


def _says_no_answer(text: str) -> bool:
    """The reply abstains: it is empty, holds the marker (any case), or is nothing but the
    marker written loosely ("No answer.", "no-answer"). An answer that merely contains the
    words ("She got no answer from the bank.") is an answer."""
    if not text or NO_ANSWER in text.upper():
        return True
    loose = re.sub(r"[\s-]+", "_", text.strip(" \t\n.!\"'`*")).upper()
    return loose == NO_ANSWER


def _usage(tally: MemoryUsageSink) -> dict[str, int]:
    recs = tally.records
    return {
        "calls": len(recs),
        "prompt_tokens": sum(r.prompt_tokens for r in recs),
        "completion_tokens": sum(r.completion_tokens for r in recs),
    }


__all__ = ["GroundedAnswerer", "GroundedParams", "LLMError"]
