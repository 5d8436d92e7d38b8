"""Reading one long document for one question (``memstrata read``, ``Memory.read``).

The document is stored once, as the episode ``document`` of a namespace named by its
hash (``read-<sha256 prefix>``), so what a reader builds over it (per question, tier and
model) is kept in the same store and reused by the next question. Nothing is built by
the configured recipe there: the episode is written without the inline builders.

A transcript (a document whose lines start turns with a speaker's label,
:mod:`memstrata.retrieval.transcript`) is also stored turn by turn, as episodes of
:func:`~memstrata.retrieval.transcript.turns_namespace`, so a reader can search its turns
as the engine searches a conversation. Its ids are the turns' indexes (``0``, ``1``, ...).

Which reader: the one of the design named by ``design``, else the configuration's
``reader``, else the only design that has one (:meth:`Registry.reader`). This module
names no design.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import TYPE_CHECKING, Any

from memstrata.embed.cache import made_for
from memstrata.engine.contracts import Reading
from memstrata.errors import InvalidInputError
from memstrata.ingest import decode_utf8, prepare_episode
from memstrata.retrieval.transcript import turns, turns_namespace
from memstrata.store import PreparedEpisode

if TYPE_CHECKING:
    from memstrata.updates import EpisodeWriter

DOCUMENT_ID = "document"


def document_namespace(text: str) -> str:
    return "read-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


async def read_document(
    memory: EpisodeWriter,
    text: str | bytes,
    question: str,
    *,
    design: str | None = None,
    tier: str | None = None,
    graph_only: bool = False,
    params: dict[str, Any] | None = None,
) -> Reading:
    """Store the document (once) and hand it to the chosen design's reader."""
    if isinstance(text, bytes):
        text = decode_utf8(text)
    if not question.strip() and not graph_only:
        raise InvalidInputError("the question is empty")
    prepared = prepare_episode({"text": text, "id": DOCUMENT_ID}, memory.config)
    reader = memory.engine.registry.reader(design or memory.config.reader, params)
    namespace = document_namespace(text)
    await asyncio.to_thread(memory._write_batch, namespace, [prepared])
    await _store_turns(memory, namespace, text)
    episode = (await asyncio.to_thread(memory.store.get_episodes, namespace, [DOCUMENT_ID]))[0]
    ctx = memory.engine.context(namespace, tier)
    with made_for(namespace):  # the vectors it makes are the document's namespace's
        return await reader.read(ctx, namespace, episode, question, graph_only=graph_only)


async def _store_turns(memory: EpisodeWriter, namespace: str, text: str) -> None:
    """The document's turns as episodes, when it is a transcript. Written in batches of
    their own transactions; a turn already stored is skipped, so a read cut short is
    completed by the next one. A turn with no text, or over ``max_episode_chars``, is
    left out (the document itself holds it)."""
    found = await asyncio.to_thread(turns, text)
    if not found:
        return
    where = turns_namespace(namespace)
    limit = memory.config.max_episode_chars
    bodies = {str(i): text[t.body : t.end].strip() for i, t in enumerate(found)}
    bodies = {i: b for i, b in bodies.items() if b and len(b) <= limit}
    # every later question on the document finds them stored: one lookup, no writes
    stored = await asyncio.to_thread(memory.store.existing_ids, where, list(bodies))
    prepared: list[PreparedEpisode] = []
    for i, body in bodies.items():
        if i not in stored:
            t = found[int(i)]
            item = {"id": i, "text": body, "speaker": t.speaker, "occurred_at": t.at}
            prepared.append(prepare_episode(item, memory.config))
    if prepared:
        await memory._write_batches(where, prepared, 256, False, None)
