"""LlamaIndex's memory block and retriever, kept in memstrata.

* :class:`MemstrataMemoryBlock` is a ``BaseMemoryBlock`` of LlamaIndex's ``Memory``: the
  messages ``Memory`` flushes from its short-term queue become episodes of a memstrata
  namespace (with their role, the memory's session id as the session, and the whole
  message in the metadata); each ``Memory.get`` recalls the episodes relevant to the
  latest messages, every one rendered with the ids of the episodes it rests on;
* :class:`MemstrataRetriever` is a ``BaseRetriever``: the hits of a memstrata search as
  ``NodeWithScore``, each node's metadata naming the hit's kind, id and source episodes,
  for a ``RetrieverQueryEngine`` or any other consumer of retrievers.

Both take any memstrata client (docs/integrations.md)::

    from llama_index.core.memory import Memory as ChatMemory

    from memstrata import Memory
    from memstrata.integrations.llamaindex import MemstrataMemoryBlock, MemstrataRetriever

    memory = Memory.open("memory.db")
    chat = ChatMemory.from_defaults(
        session_id="s1", memory_blocks=[MemstrataMemoryBlock(memory=memory, namespace="ana")]
    )
    retriever = MemstrataRetriever(memory, namespace="ana", similarity_top_k=4)
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, TextBlock
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.callbacks import CallbackManager
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.utils import get_tokenizer

from memstrata.errors import InvalidInputError, NamespaceNotFoundError
from memstrata.integrations.bridge import Bridge, held
from memstrata.models import Hit, SearchResult
from memstrata.store.base import SearchFilters

#: the key of an episode's metadata that holds the whole LlamaIndex message
FIELD = "llamaindex"
#: the key ``BaseMemoryBlock.aput`` adds to each message's ``additional_kwargs``
SESSION_KEY = "session_id"
#: where one rendered item ends and the next begins (see :func:`render`)
_BETWEEN = re.compile(r"(?<=</recalled>)\n(?=<recalled )")


def text_of(messages: list[ChatMessage]) -> str:
    """The text blocks of ``messages``, a space between messages (what the query and the
    episode's text are made of, as in LlamaIndex's ``VectorMemoryBlock``)."""
    parts = ["".join(b.text for b in m.blocks if isinstance(b, TextBlock)) for m in messages]
    return " ".join(p for p in parts if p)


async def _search(
    bridge: Bridge,
    query: str,
    *,
    namespace: str | None,
    k: int,
    recipe: str | None,
    sessions: list[str] | None,
) -> SearchResult | None:
    """The search, or None where the namespace holds nothing yet."""
    filters = SearchFilters(sessions=sessions) if sessions else None
    try:
        return await bridge.client.search(
            query, namespace=namespace, k=k, recipe=recipe, filters=filters, max_tokens=None
        )
    except NamespaceNotFoundError:
        return None


def render(hit: Hit) -> str:
    """One recalled item, naming what it is and the episodes it rests on (an episode is
    its own source: its id is not written twice, as every token counts in a prompt)."""
    named = "" if hit.kind == "episode" and hit.sources == [hit.id] else f' id="{hit.id}"'
    session = hit.metadata.get("session")
    where = f' session="{session}"' if session else ""
    sources = " ".join(hit.sources)
    return f'<recalled kind="{hit.kind}"{named} sources="{sources}"{where}>{hit.text}</recalled>'


class MemstrataMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory of LlamaIndex's ``Memory`` in a memstrata namespace.

    ``memory`` is any memstrata client; ``namespace`` the one written and searched (None:
    the client's default), for instance one per user, so that all of a user's sessions
    are one memory; ``similarity_top_k`` how many hits are recalled; ``recipe`` the
    memstrata recipe (None: the configured one); ``retrieval_context_window`` how many of
    the latest messages make the query; ``session_only`` keeps recall to the memory's own
    session, as LlamaIndex's ``VectorMemoryBlock`` does (by default every session of the
    namespace is recalled: that is what long-term memory is for)."""

    name: str = Field(default="memstrata", description="The name of the memory block.")
    memory: Any = Field(exclude=True, description="A memstrata client.")
    namespace: str | None = Field(default=None, description="The memstrata namespace.")
    similarity_top_k: int = Field(default=4, ge=1, description="How many hits to recall.")
    retrieval_context_window: int = Field(
        default=5, ge=1, description="How many of the latest messages make the query."
    )
    recipe: str | None = Field(default=None, description="The memstrata recipe.")
    session_only: bool = Field(
        default=False, description="Recall only episodes of the memory's own session."
    )
    _bridge: Bridge = PrivateAttr()
    _tokens: Callable[[str], list[Any]] = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        held(data.get("namespace"))  # memstrata's error, not wrapped by pydantic
        super().__init__(**data)

    def model_post_init(self, context: Any, /) -> None:
        self._bridge = Bridge(self.memory)
        self._tokens = get_tokenizer()

    async def _aget(
        self,
        messages: list[ChatMessage] | None = None,
        session_id: str | None = None,
        **block_kwargs: Any,
    ) -> str:
        """The hits for the latest messages' text, best first, one item after another."""
        query = text_of((messages or [])[-self.retrieval_context_window :])
        if not query.strip():
            return ""
        sessions = [session_id] if self.session_only and session_id else None
        found = await self._bridge.arun(
            _search(
                self._bridge,
                query,
                namespace=self.namespace,
                k=self.similarity_top_k,
                recipe=self.recipe,
                sessions=sessions,
            )
        )
        if found is None:
            return ""
        return "\n".join(render(hit) for hit in found.hits[: self.similarity_top_k])

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Each message with text as an episode; all of them are checked before any is
        stored, so a message that is not JSON stores none of its batch."""
        items = [item for m in messages if (item := self._episode(m)) is not None]
        if items:
            await self._bridge.arun(self._bridge.client.add_many(items, namespace=self.namespace))

    def _episode(self, message: ChatMessage) -> dict[str, Any] | None:
        text = text_of([message])
        if not text.strip():  # an image alone, a tool call alone: nothing to search
            return None
        held = dict(message.additional_kwargs)
        session = held.pop(SESSION_KEY, None)
        session = session if isinstance(session, str) and session else None
        copy = message.model_copy(update={"additional_kwargs": held})
        try:  # pydantic's JSON mode would write NaN as null: refused here instead
            json.dumps(copy.model_dump()["additional_kwargs"], allow_nan=False, default=str)
            whole = copy.model_dump(mode="json")
        except ValueError as exc:  # pydantic's serialisation error is one
            raise InvalidInputError(
                f"a {message.role.value} message that is not JSON cannot be stored: {exc}"
            ) from exc
        return {
            "id": f"{session or 'llamaindex'}-{uuid.uuid4().hex}",
            "text": text,
            "role": message.role.value,
            "session": session,
            "metadata": {FIELD: whole},
        }

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """The least relevant items dropped, from the last, until ``tokens_to_truncate``
        tokens are saved (LlamaIndex's reference blocks drop everything at once)."""
        items = _BETWEEN.split(content) if content else []
        saved = 0
        while items and saved < tokens_to_truncate:
            saved += len(self._tokens(items.pop()))
        return "\n".join(items) if items else None


class MemstrataRetriever(BaseRetriever):
    """The hits of a memstrata search as LlamaIndex nodes.

    ``memory`` is any memstrata client; ``namespace`` the one searched (None: the
    client's default); ``similarity_top_k`` how many nodes; ``recipe`` the memstrata
    recipe (None: the configured one); ``sessions`` keeps the search to those
    conversations."""

    def __init__(
        self,
        memory: Any,
        *,
        namespace: str | None = None,
        similarity_top_k: int = 4,
        recipe: str | None = None,
        sessions: list[str] | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise ValueError(f"similarity_top_k is a positive int, not {similarity_top_k!r}")
        self._bridge = Bridge(memory)
        self.namespace = held(namespace)
        self.similarity_top_k = similarity_top_k
        self.recipe = recipe
        self.sessions = list(sessions) if sessions else None
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._bridge.run(self._nodes(query_bundle.query_str), "MemstrataRetriever")

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await self._bridge.arun(self._nodes(query_bundle.query_str))

    async def _nodes(self, query: str) -> list[NodeWithScore]:
        found = await _search(
            self._bridge,
            query,
            namespace=self.namespace,
            k=self.similarity_top_k,
            recipe=self.recipe,
            sessions=self.sessions,
        )
        if found is None:
            return []
        return [node_of(hit, found.namespace) for hit in found.hits[: self.similarity_top_k]]


def node_of(hit: Hit, namespace: str) -> NodeWithScore:
    """A hit as a scored node: its text, and where it comes from (shown to the model
    with the text; left out of any embedding of the node)."""
    metadata = {
        "namespace": namespace,
        "kind": hit.kind,
        "id": hit.id,
        "sources": list(hit.sources),
    }
    if hit.metadata.get("session"):
        metadata["session"] = hit.metadata["session"]
    node = TextNode(
        id_=hit.id,
        text=hit.text,
        metadata=metadata,
        excluded_embed_metadata_keys=list(metadata),
    )
    return NodeWithScore(node=node, score=hit.score)


__all__ = ["MemstrataMemoryBlock", "MemstrataRetriever"]
