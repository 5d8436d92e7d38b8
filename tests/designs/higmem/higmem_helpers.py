"""Helpers of the HiGMem tests: turns in a real in-memory store, a scripted
model that answers each prompt family by its own rule."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from memstrata.embed.cache import ensure_embedded
from memstrata.engine.contracts import Context
from memstrata.llm import LLMClient
from memstrata.llm.fence import unfence
from memstrata.llm.scripted import ScriptedBackend
from memstrata.llm.types import Message
from memstrata.models import Episode
from memstrata.retrieval import documents
from memstrata.store import PreparedEpisode, SQLiteStore

NS = "t"
T0 = datetime(2023, 5, 8, 13, 56)


def add_turns(
    store: SQLiteStore, turns: Sequence[tuple[str, str, str]], embedder=None, start: int = 0
) -> list[Episode]:
    """(session, speaker, text) turns as episodes ``e{start}``, ..., a minute apart, with
    their vectors when ``embedder`` is given (as ``add`` stores them)."""
    ids = [f"e{start + i}" for i in range(len(turns))]
    hashes: list[bytes | None] = [None] * len(turns)
    if embedder is not None:
        texts = [documents.embed_text(text, speaker, {}) for _, speaker, text in turns]
        hashes = list(ensure_embedded(store, embedder, texts))
    store.add_episodes(
        NS,
        [
            PreparedEpisode(
                external_id=eid,
                text=text,
                speaker=speaker,
                session=session,
                occurred_at=T0 + timedelta(minutes=start + i),
                content_hash=hashlib.sha256(f"{eid}:{text}".encode()).digest()[:16],
                index_text=f"{speaker} {text}",
                embed_hash=hashes[i],
            )
            for i, (eid, (session, speaker, text)) in enumerate(zip(ids, turns, strict=True))
        ],
    )
    got = {e.id: e for e in store.get_episodes(NS, ids)}
    return [got[i] for i in ids]


FAMILY = {
    "analysis": "You analyse one turn",
    "affiliation": "organise a conversation memory into events",
    "refresh": "You maintain one event",
    "keywords": "into search keywords",
    "predict": "pick the turns inside the events",
    "filter": "You select evidence",
    "answer": "You answer a question about a long conversation",
}


# the same families as the paper words them (higmem-paper)
PAPER_FAMILY = {
    "analysis": "This prompt is used when a new dialogue turn",
    "affiliation": "This prompt determines whether a newly added turn",
    "refresh": "This layer includes a short summary",
    "keywords": "generate query keyword",
    "predict": "event-local selection step",
    "filter": "This prompt family is used during question answering",
    "answer": ", the model is ",
}


def family(messages: list[Message]) -> str:
    system = messages[0].content
    markers = [*FAMILY.items(), *PAPER_FAMILY.items()]
    return next(name for name, marker in markers if marker in system)


Rule = Callable[[list[Message]], dict | str]


class ByFamily(ScriptedBackend):
    """Answers each prompt family with its rule; records the requests per family."""

    def __init__(self, rules: dict[str, Rule]) -> None:
        super().__init__([])
        self.rules = rules
        self.asked: dict[str, list[list[Message]]] = {}

    async def complete(self, messages, **kw):  # type: ignore[no-untyped-def]
        name = family(messages)
        self.asked.setdefault(name, []).append(list(messages))
        reply = self.rules[name](messages)
        if isinstance(reply, BaseException):
            raise reply
        self._script.append(reply if isinstance(reply, str) else json.dumps(reply))
        return await super().complete(messages, **kw)


def analysis_reply(messages: list[Message]) -> dict:
    turn = unfence(messages[-1].content).split("Current turn:\n", 1)[1]
    return {"keywords": ["k"], "tags": ["t"], "context": "c", "dates": [], "fact": f"F {turn}"}


def llm_ctx(store: SQLiteStore, embedder, backend: ScriptedBackend) -> Context:
    return Context(store, embedder, LLMClient(backend, max_retries=0), "llm")
