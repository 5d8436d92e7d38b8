"""LangChain's retriever and chat message history, kept in memstrata.

* :class:`MemstrataRetriever` is a ``BaseRetriever``: ``invoke(query)`` runs a memstrata
  search and returns its hits as ``Document``s, each naming the episodes it rests on
  (``metadata["sources"]``), the hit's kind, id and score;
* :class:`MemstrataChatMessageHistory` is a ``BaseChatMessageHistory``: each message is
  an episode of the namespace, in the conversation's session, with its role (``user``,
  ``assistant``, ``system``, ``tool``) and the whole message in its metadata, so the
  history reads back exactly and the turns are searchable memory like any other.

Both take any memstrata client (docs/integrations.md)::

    from memstrata import Memory
    from memstrata.integrations.langchain import MemstrataChatMessageHistory, MemstrataRetriever

    memory = Memory.open("memory.db")
    history = MemstrataChatMessageHistory(memory, session_id="t1", namespace="ana")
    retriever = MemstrataRetriever(memory=memory, namespace="ana", k=4)
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from memstrata.errors import NamespaceNotFoundError
from memstrata.integrations.bridge import Bridge, episodes
from memstrata.models import Episode, Hit
from memstrata.store.base import SearchFilters

#: the key of an episode's metadata that holds the whole LangChain message
FIELD = "langchain"
#: LangChain's message types as memstrata roles
ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
PAGE = 1000


class MemstrataRetriever(BaseRetriever):
    """The hits of a memstrata search as LangChain documents.

    ``memory`` is any memstrata client; ``namespace`` the one searched (None: the
    client's default); ``k`` how many documents (also ``invoke(query, k=...)``);
    ``recipe`` the memstrata recipe (None: the configured one); ``sessions`` keeps the
    search to those conversations."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any = Field(exclude=True)
    namespace: str | None = None
    k: int = Field(default=4, ge=1)
    recipe: str | None = None
    sessions: list[str] | None = None
    _bridge: Bridge = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._bridge = Bridge(self.memory)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return self._bridge.run(self._search(query, kwargs.get("k")), "MemstrataRetriever")

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return await self._bridge.arun(self._search(query, kwargs.get("k")))

    async def _search(self, query: str, k: int | None) -> list[Document]:
        want = k or self.k
        filters = SearchFilters(sessions=self.sessions) if self.sessions else None
        try:
            found = await self._bridge.client.search(
                query,
                namespace=self.namespace,
                k=want,
                recipe=self.recipe,
                filters=filters,
                max_tokens=None,
            )
        except NamespaceNotFoundError:  # nothing remembered there yet
            return []
        return [document_of(hit, found.namespace) for hit in found.hits[:want]]


def document_of(hit: Hit, namespace: str) -> Document:
    """A hit as a document: its text, and where it comes from."""
    return Document(
        page_content=hit.text,
        id=hit.id,
        metadata={
            "namespace": namespace,
            "kind": hit.kind,
            "id": hit.id,
            "score": hit.score,
            "sources": list(hit.sources),
        },
    )


class MemstrataChatMessageHistory(BaseChatMessageHistory):
    """One conversation's messages as episodes of a memstrata namespace.

    ``session_id`` names the conversation (the episodes' session); ``namespace`` is the
    memstrata namespace (None: the client's default), for instance one per user, so the
    user's conversations are one memory a :class:`MemstrataRetriever` searches."""

    def __init__(self, memory: Any, session_id: str, *, namespace: str | None = None) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise ValueError(f"a session id is a non-empty string, not {session_id!r}")
        self._bridge = Bridge(memory)
        self.session_id = session_id
        self.namespace = namespace

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return self._bridge.run(self._messages(), "MemstrataChatMessageHistory")

    async def aget_messages(self) -> list[BaseMessage]:
        return await self._bridge.arun(self._messages())

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self._bridge.run(self._add(list(messages)), "MemstrataChatMessageHistory")

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await self._bridge.arun(self._add(list(messages)))

    def clear(self) -> None:
        self._bridge.run(self._clear(), "MemstrataChatMessageHistory")

    async def aclear(self) -> None:
        await self._bridge.arun(self._clear())

    async def _episodes(self) -> list[Episode]:
        found = episodes(self._bridge.client, self.namespace, self.session_id, page=PAGE)
        return [e async for e in found]

    async def _messages(self) -> list[BaseMessage]:
        return [message_of(e) for e in await self._episodes()]

    async def _add(self, messages: list[BaseMessage]) -> None:
        if not messages:
            return
        items = [self._episode(m) for m in messages]  # all checked before any is stored
        await self._bridge.client.add_many(items, namespace=self.namespace)

    def _episode(self, message: BaseMessage) -> dict[str, Any]:
        held = message_to_dict(message)
        json.dumps(held)  # a message that is not JSON is refused before anything is stored
        return {
            "id": message.id or f"{self.session_id}-{uuid.uuid4().hex}",
            "text": message.text or json.dumps(held["data"], ensure_ascii=False),
            "role": ROLES.get(message.type, message.type),
            "speaker": getattr(message, "name", None) or None,
            "session": self.session_id,
            "metadata": {FIELD: held},
        }

    async def _clear(self) -> None:
        ids = [e.id for e in await self._episodes()]
        if ids:
            await self._bridge.client.delete(ids, namespace=self.namespace)


def message_of(episode: Episode) -> BaseMessage:
    """An episode as the message it was, or, written by other means, as what its role
    says (a turn without one is the user's)."""
    held = episode.metadata.get(FIELD)
    if isinstance(held, dict) and "type" in held:
        return messages_from_dict([held])[0]
    kind = {v: k for k, v in ROLES.items()}.get(episode.role or "user", "human")
    data: dict[str, Any] = {"content": episode.text, "id": episode.id}
    if kind == "tool":
        kind, data = "chat", {**data, "role": "tool"}
    if episode.speaker and kind in ("human", "ai"):
        data["name"] = episode.speaker
    return messages_from_dict([{"type": kind, "data": data}])[0]


__all__ = ["MemstrataChatMessageHistory", "MemstrataRetriever"]
