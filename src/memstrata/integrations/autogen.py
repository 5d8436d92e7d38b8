"""AutoGen's memory, kept in memstrata.

:class:`MemstrataMemory` is an ``autogen_core.memory.Memory``: an ``AssistantAgent``
given ``memory=[MemstrataMemory(memory, namespace="ana")]`` recalls, before each model
call, what the memstrata search finds for the conversation's last message, and the
model reads each recalled item with the episodes it rests on::

    from autogen_agentchat.agents import AssistantAgent
    from memstrata import Memory
    from memstrata.integrations.autogen import MemstrataMemory

    memory = Memory.open("memory.db")
    ana = MemstrataMemory(memory, namespace="ana", session="t1")
    agent = AssistantAgent("assistant", model_client, memory=[ana])

How the two models meet (docs/integrations.md):

* one ``MemstrataMemory`` is one memstrata namespace (a user's memory, say); ``session``
  names the conversation its additions belong to, while queries read the whole
  namespace, every conversation of it;
* a ``MemoryContent`` is an episode: its text (a mapping as JSON, bytes as UTF-8) is
  the episode's text, its MIME type and metadata sit in the episode's metadata
  (``autogen``), so a query gives back the content as it was added;
* a query is a memstrata search; every item it returns names, in
  ``metadata["memstrata"]``, the episodes it rests on (``sources``), its kind, id and
  score. A blank query returns every memory in the order added, as ``ListMemory`` does.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Coroutine
from typing import Any, Self, TypeVar

from autogen_core import CancellationToken, Component, Image
from autogen_core.memory import (
    Memory,
    MemoryContent,
    MemoryMimeType,
    MemoryQueryResult,
    UpdateContextResult,
)
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage
from pydantic import BaseModel, Field, SecretStr

from memstrata.errors import InvalidInputError, NamespaceNotFoundError
from memstrata.integrations.bridge import Bridge, episodes
from memstrata.models import Episode, Hit
from memstrata.runner import Blocking
from memstrata.store.names import check_namespace

#: the key of an episode's metadata that holds the content's MIME type, kind and metadata
FIELD = "autogen"
#: the key of a returned item's metadata that says where it comes from
SOURCE = "memstrata"
PAGE = 1000

T = TypeVar("T")


class MemstrataMemoryConfig(BaseModel):
    """What rebuilds a :class:`MemstrataMemory` (AutoGen's component config): the store
    it opens (``store``, a path or database URL) or the service it calls (``url``, with
    ``key``), and its options."""

    name: str | None = None
    store: str | None = None
    url: str | None = None
    key: SecretStr | None = None
    namespace: str | None = None
    session: str | None = None
    k: int = Field(default=5, ge=1)
    recipe: str | None = None


class MemstrataMemory(Memory, Component[MemstrataMemoryConfig]):
    """An AutoGen ``Memory`` over one namespace of a memstrata client.

    ``memory`` is any memstrata client (``Memory``, ``AsyncMemory``, ``RemoteMemory``,
    ``AsyncRemoteMemory``); ``namespace`` the one this memory reads and writes (None:
    the client's default); ``session`` the conversation its additions are part of;
    ``k`` how many items a query returns (also ``query(..., k=)``); ``recipe`` the
    memstrata recipe a query runs (None: the configured one)."""

    component_type = "memory"
    component_provider_override = "memstrata.integrations.autogen.MemstrataMemory"
    component_config_schema = MemstrataMemoryConfig

    def __init__(
        self,
        memory: Any,
        *,
        namespace: str | None = None,
        session: str | None = None,
        k: int = 5,
        recipe: str | None = None,
        name: str | None = None,
    ) -> None:
        if namespace is not None:
            check_namespace(namespace)
        if k < 1:
            raise InvalidInputError(f"k is a positive number of items, not {k!r}")
        self._memory = memory
        self._bridge = Bridge(memory)
        self._owned = False  # opened from a config: closed by close()
        self.namespace = namespace
        self.session = session
        self.k = k
        self.recipe = recipe
        self.name = name or "memstrata"

    # Memory --------------------------------------------------------------------------------
    async def add(
        self, content: MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> None:
        item = episode_of(content, self.session)  # refused before anything is stored
        await self._call(
            self._bridge.client.add(namespace=self.namespace, **item), cancellation_token
        )

    async def query(
        self,
        query: str | MemoryContent = "",
        cancellation_token: CancellationToken | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """The memories for ``query``, best first (``k=`` overrides the memory's); a blank
        query returns every memory, in the order added."""
        text = query if isinstance(query, str) else _text(query.content)
        k = kwargs.get("k", self.k)
        if not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"k is a positive number of items, not {k!r}")
        found = self._all() if not text.strip() else self._search(text, k)
        return MemoryQueryResult(results=await self._call(found, cancellation_token))

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Adds to ``model_context`` a system message listing what a query by its last
        message recalls, each item with the episodes it rests on."""
        messages = await model_context.get_messages()
        said = _said(messages[-1].content) if messages else ""
        if not said.strip():
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        recalled = await self.query(said)
        if recalled.results:
            lines = [
                f"{i}. {_text(item.content)} (episodes: {', '.join(_sources(item))})"
                for i, item in enumerate(recalled.results, 1)
            ]
            await model_context.add_message(
                SystemMessage(content="\nRelevant memory content:\n" + "\n".join(lines) + "\n")
            )
        return UpdateContextResult(memories=recalled)

    async def clear(self) -> None:
        """Deletes every memory of the namespace (all a query can return), as a delete
        does everywhere in memstrata."""
        client = self._bridge.client
        namespace = self.namespace or _default_namespace(client)
        try:
            await self._bridge.arun(client.delete_namespace(namespace))
        except NamespaceNotFoundError:
            return

    async def close(self) -> None:
        """Closes the client if this memory opened it (from a config); a client given to
        the constructor stays open for its owner."""
        if self._owned:
            self._owned = False
            if isinstance(self._memory, Blocking):
                await asyncio.to_thread(self._memory.close)
            else:
                await self._memory.close()

    # the client's calls --------------------------------------------------------------------
    async def _call(self, coro: Coroutine[Any, Any, T], token: CancellationToken | None) -> T:
        """``coro`` on the client; a cancelled token stops the wait (a write already
        handed to the store may still land)."""
        if token is None:
            return await self._bridge.arun(coro)
        if token.is_cancelled():
            coro.close()
            raise asyncio.CancelledError("the memory call was cancelled")
        task = asyncio.ensure_future(self._bridge.arun(coro))
        token.link_future(task)
        return await task

    async def _search(self, text: str, k: int) -> list[MemoryContent]:
        client = self._bridge.client
        try:
            found = await client.search(
                text, namespace=self.namespace, k=k, recipe=self.recipe, max_tokens=None
            )
        except NamespaceNotFoundError:  # nothing remembered there yet
            return []
        hits = found.hits[:k]
        ids = [h.id for h in hits if h.kind == "episode"]
        held = {e.id: e for e in await client.get(ids, namespace=found.namespace)} if ids else {}
        return [content_of(held.get(hit.id), found.namespace, hit) for hit in hits]

    async def _all(self) -> list[MemoryContent]:
        found = episodes(self._bridge.client, self.namespace, page=PAGE)
        return [content_of(e, e.namespace) async for e in found]

    # component config ----------------------------------------------------------------------
    def _to_config(self) -> MemstrataMemoryConfig:
        """The store or service of the client, and this memory's options."""
        client = self._bridge.client
        where: dict[str, Any] = {}
        if hasattr(client, "base_url"):  # a service
            where["url"] = client.base_url.removesuffix("/v1")
            bearer = client._headers.get("Authorization", "").removeprefix("Bearer ")
            where["key"] = SecretStr(bearer) if bearer else None
        else:
            where["store"] = client.store.url
        return MemstrataMemoryConfig(
            name=self.name,
            namespace=self.namespace,
            session=self.session,
            k=self.k,
            recipe=self.recipe,
            **where,
        )

    @classmethod
    def _from_config(cls, config: MemstrataMemoryConfig) -> Self:
        """A memory over a client it opens (and closes in :meth:`close`): a ``Memory``
        on ``store``, or a ``RemoteMemory`` of ``url``."""
        if (config.store is None) == (config.url is None):
            raise InvalidInputError(
                "a memstrata memory's config names a store or a url, one of them"
            )
        client: Any
        if config.url is not None:
            from memstrata.service.remote import RemoteMemory

            key = config.key.get_secret_value() if config.key is not None else None
            client = RemoteMemory(config.url, key)
        else:
            from memstrata.facade import Memory as Store

            client = Store.open(config.store)
        memory = cls(
            client,
            namespace=config.namespace,
            session=config.session,
            k=config.k,
            recipe=config.recipe,
            name=config.name,
        )
        memory._owned = True
        return memory


# the content model ---------------------------------------------------------------------------
def episode_of(content: MemoryContent, session: str | None) -> dict[str, Any]:
    """The episode a memory content is: its text, and what gives the content back."""
    body = content.content
    held: dict[str, Any] = {"mime_type": _mime(content.mime_type)}
    held["mime_enum"] = isinstance(content.mime_type, MemoryMimeType)
    if isinstance(body, Image):
        raise InvalidInputError("memstrata remembers text: an image is not a memory it can hold")
    if isinstance(body, bytes):
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                f"memstrata remembers text: these bytes are not UTF-8 ({exc})"
            ) from exc
        held["kind"] = "bytes"
    elif isinstance(body, dict):
        held["kind"], held["json"] = "json", body
        text = _json(body, "the content")
    else:
        held["kind"], text = "text", str(body)
    if content.metadata is not None:
        held["metadata"] = content.metadata
        _json(content.metadata, "the metadata")
    return {
        "text": text,
        "id": uuid.uuid4().hex,
        "session": session,
        "metadata": {FIELD: held},
    }


def content_of(episode: Episode | None, namespace: str, hit: Hit | None = None) -> MemoryContent:
    """A hit (or a listed episode) as the memory content it was added as, with where it
    comes from in ``metadata["memstrata"]``; a derived record, or an episode written by
    other means, reads as plain text."""
    source: dict[str, Any] = {"namespace": namespace}
    if hit is not None:
        source.update(kind=hit.kind, id=hit.id, score=hit.score, sources=list(hit.sources))
    elif episode is not None:
        source.update(kind="episode", id=episode.id, sources=[episode.id])
    if episode is not None:
        source["session"] = episode.session
    held = episode.metadata.get(FIELD) if episode is not None else None
    if episode is None or not isinstance(held, dict):
        text = hit.text if hit is not None else episode.text if episode is not None else ""
        return MemoryContent(content=text, mime_type=MemoryMimeType.TEXT, metadata={SOURCE: source})
    body: Any = episode.text
    if held.get("kind") == "json":
        body = held.get("json")
    elif held.get("kind") == "bytes":
        body = episode.text.encode("utf-8")
    mime = str(held.get("mime_type", MemoryMimeType.TEXT.value))
    metadata = dict(held.get("metadata") or {})
    metadata[SOURCE] = source
    return MemoryContent(
        content=body,
        mime_type=MemoryMimeType(mime) if held.get("mime_enum") else mime,
        metadata=metadata,
    )


def _default_namespace(client: Any) -> str:
    """The namespace a client's verbs use when given none."""
    return str(client.namespace if hasattr(client, "base_url") else client.config.namespace)


def _mime(mime: MemoryMimeType | str) -> str:
    return mime.value if isinstance(mime, MemoryMimeType) else str(mime)


def _json(value: Any, what: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} is not JSON ({exc}); nothing was stored") from exc


def _text(body: Any) -> str:
    if isinstance(body, bytes):
        return body.decode("utf-8", errors="replace")
    if isinstance(body, dict):
        return json.dumps(body, ensure_ascii=False)
    return str(body)


def _said(content: Any) -> str:
    """The text of a message's content (a multimodal list: its strings)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part for part in content if isinstance(part, str))
    return ""


def _sources(item: MemoryContent) -> list[str]:
    source = (item.metadata or {}).get(SOURCE) or {}
    return [str(s) for s in source.get("sources", [])]


__all__ = ["MemstrataMemory", "MemstrataMemoryConfig"]
