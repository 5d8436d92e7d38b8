"""Google ADK's memory service, kept in memstrata.

:class:`MemstrataMemoryService` is a ``google.adk.memory.BaseMemoryService``: a
``Runner(..., memory_service=MemstrataMemoryService(memory))`` stores its sessions in
memstrata, and the ``load_memory`` / ``preload_memory`` tools recall from it, each
memory naming the episode it is::

    from google.adk.runners import Runner
    from memstrata import Memory
    from memstrata.integrations.google_adk import MemstrataMemoryService

    memory = Memory.open("memory.db")
    runner = Runner(app_name="cook", agent=agent, session_service=sessions,
                    memory_service=MemstrataMemoryService(memory))

How the two models meet (docs/integrations.md):

* an app's user is a memstrata namespace, ``prefix + "app/user"`` (a ``/`` or ``%`` in
  either name is percent-encoded, so no two pairs share a namespace): each user is a
  memstrata tenant of their own;
* an event with text is an episode of the session (memstrata's ``session``): its id is
  the event's id, its text the event's visible text (thoughts left out), its speaker the
  event's author, its time the event's; the content, author and timestamp sit in the
  episode's metadata (``adk``), so a search gives the memory back as ADK keeps it;
* a search is the recipe's search in the user's namespace; every entry's id is the
  episode it is (the one ``delete_memory`` takes) and its ``custom_metadata["memstrata"]``
  names the episodes it rests on, its kind and score.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from google.adk.errors.input_validation_error import InputValidationError
from google.adk.events._rewind_events import get_active_events
from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types

from memstrata.errors import InvalidInputError, NamespaceNotFoundError
from memstrata.integrations.bridge import Bridge, episodes
from memstrata.models import Episode, Hit
from memstrata.store.names import check_namespace

#: the key of an episode's metadata that holds what ADK keeps of a memory
FIELD = "adk"
#: the key of an entry's custom metadata that says where it comes from
SOURCE = "memstrata"
PAGE = 1000


class MemstrataMemoryService(BaseMemoryService):
    """An ADK memory service over a memstrata client.

    ``memory`` is any memstrata client (``Memory``, ``AsyncMemory``, ``RemoteMemory``,
    ``AsyncRemoteMemory``); ``prefix`` starts every namespace the service uses (to keep
    an agent's memories apart from others of the same database); ``k`` is how many
    memories a search returns (ten, as ADK's in-memory service); ``recipe`` the
    memstrata recipe a search runs (None: the configured one)."""

    def __init__(
        self, memory: Any, *, prefix: str = "", k: int = 10, recipe: str | None = None
    ) -> None:
        if k < 1:
            raise InputValidationError(f"k is a positive number of memories, not {k!r}")
        self._bridge = Bridge(memory)
        self._client = self._bridge.client
        self.prefix = prefix
        self.k = k
        self.recipe = recipe
        # deleted memories a later add of their session must not bring back, per
        # namespace (as ADK's in-memory service keeps them: for this object's life)
        self._deleted: dict[str, set[str]] = {}

    # names ----------------------------------------------------------------------------------
    def namespace(self, app_name: str, user_id: str) -> str:
        """The memstrata namespace of an app's user; ADK's ``InputValidationError`` for
        names memstrata cannot hold."""
        for what, name in (("app name", app_name), ("user id", user_id)):
            if not isinstance(name, str) or not name:
                raise InputValidationError(f"an {what} is a non-empty string, not {name!r}")
        name = f"{self.prefix}{_part(app_name)}/{_part(user_id)}"
        try:
            return check_namespace(name)
        except InvalidInputError as exc:
            raise InputValidationError(
                f"memstrata cannot hold the memories of app {app_name!r}, user {user_id!r}: {exc}"
            ) from exc

    # BaseMemoryService -----------------------------------------------------------------------
    async def add_session_to_memory(self, session: Session) -> None:
        """The session's live events (a rewind takes events back) as episodes of its
        session: new ones added, changed ones replaced (the old version stays in the
        episode's history), those no longer live deleted."""
        name = self.namespace(session.app_name, session.user_id)
        deleted = self._deleted.get(name, set())
        live = [e for e in get_active_events(list(session.events)) if _text(e.content)]
        items = [episode_of(e, session.id) for e in live]
        items = [i for i in items if i["id"] not in deleted]
        await self._bridge.arun(self._add_session(name, session.id, items))

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Events added to what is remembered: an event already stored is left as it
        is, as ADK's services do. ``custom_metadata`` is kept with each event."""
        name = self.namespace(app_name, user_id)
        deleted = self._deleted.get(name, set())
        extra = _checked(custom_metadata)
        items = [episode_of(e, session_id or None, extra) for e in events if _text(e.content)]
        items = [i for i in items if i["id"] not in deleted]
        if items:
            await self._bridge.arun(self._client.add_many(items, namespace=name))

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Memories written directly, each an episode with no session; an entry with the
        id of a stored memory replaces it."""
        name = self.namespace(app_name, user_id)
        extra = _checked(custom_metadata)
        items = [entry_episode(m, extra) for m in memories]  # all checked before any is stored
        if items:
            await self._bridge.arun(self._client.add_many(items, namespace=name, replace=True))

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The user's memories for ``query``, best first; a blank query finds none."""
        name = self.namespace(app_name, user_id)
        if not isinstance(query, str) or not query.strip():
            return SearchMemoryResponse()
        return await self._bridge.arun(self._search(name, query))

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Deletes the episode ``memory_id`` (an entry's id) and what was derived from it
        alone; a later add of its session does not bring it back."""
        name = self.namespace(app_name, user_id)
        if not memory_id:
            return
        removed = await self._bridge.arun(self._delete(name, memory_id))
        if removed:
            self._deleted.setdefault(name, set()).add(memory_id)

    # the client's calls -----------------------------------------------------------------------
    async def _add_session(self, name: str, session: str, items: list[dict[str, Any]]) -> None:
        keep = {i["id"] for i in items}
        gone = [e.id for e in await self._episodes(name, session) if e.id not in keep]
        if gone:
            await self._client.delete(gone, namespace=name)
        if items:
            await self._client.add_many(items, namespace=name, replace=True)

    async def _episodes(self, name: str, session: str) -> list[Episode]:
        return [e async for e in episodes(self._client, name, session, page=PAGE)]

    async def _search(self, name: str, query: str) -> SearchMemoryResponse:
        try:
            found = await self._client.search(
                query, namespace=name, k=self.k, recipe=self.recipe, max_tokens=None
            )
        except NamespaceNotFoundError:  # nothing remembered for this user yet
            return SearchMemoryResponse()
        hits = found.hits[: self.k]
        ids = [h.id for h in hits if h.kind == "episode"]
        held = {e.id: e for e in await self._client.get(ids, namespace=name)} if ids else {}
        return SearchMemoryResponse(memories=[entry_of(h, held.get(h.id), name) for h in hits])

    async def _delete(self, name: str, memory_id: str) -> int:
        try:
            return int(await self._client.delete([memory_id], namespace=name))
        except NamespaceNotFoundError:
            return 0


# the memory model ----------------------------------------------------------------------------
def episode_of(
    event: Event, session: str | None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The episode an event with text is: its visible text, author, time and session;
    its visible content in the metadata."""
    content = _visible(event.content)
    dumped = content.model_dump(mode="json", exclude_none=True)
    author = event.author or None
    held: dict[str, Any] = {"content": dumped, "author": author, "timestamp": event.timestamp}
    if extra:
        held["custom_metadata"] = extra
    return {
        "id": event.id or _event_id(author, event.timestamp, dumped),
        "text": _text(content),
        "speaker": author,
        "role": "user" if author == "user" else "assistant",
        "occurred_at": datetime.fromtimestamp(event.timestamp, UTC),
        "session": session,
        "metadata": {FIELD: held},
    }


def entry_episode(entry: MemoryEntry, extra: dict[str, Any] | None) -> dict[str, Any]:
    """The episode a memory written directly is."""
    text = _text(entry.content)
    if not text:
        raise InputValidationError("a memory entry without text is nothing memstrata can hold")
    custom = {**_checked(entry.custom_metadata), **(extra or {})}
    held: dict[str, Any] = {
        "content": _visible(entry.content).model_dump(mode="json", exclude_none=True),
        "author": entry.author,
        "timestamp": entry.timestamp,
    }
    if custom:
        held["custom_metadata"] = custom
    item: dict[str, Any] = {
        "id": entry.id or uuid.uuid4().hex,
        "text": text,
        "speaker": entry.author,
        "metadata": {FIELD: held},
    }
    # ADK's timestamp is any string the model reads: one memstrata cannot read as a time
    # stays in the metadata alone
    with contextlib.suppress(ValueError, TypeError):
        item["occurred_at"] = datetime.fromisoformat(entry.timestamp or "")
    return item


def entry_of(hit: Hit, episode: Episode | None, namespace: str) -> MemoryEntry:
    """A hit as an ADK memory entry: the content, author and time of the event it is (a
    derived record, or an episode written by other means, as its text), and where it
    comes from."""
    source: dict[str, Any] = {
        "namespace": namespace,
        "kind": hit.kind,
        "id": hit.id,
        "score": hit.score,
        "sources": list(hit.sources),
    }
    held = episode.metadata.get(FIELD) if episode is not None else None
    if episode is None or not isinstance(held, dict):
        role = "user" if episode is None or episode.role in (None, "user") else "model"
        when = episode.occurred_at if episode is not None else None
        return MemoryEntry(
            id=hit.id,
            content=types.Content(role=role, parts=[types.Part(text=hit.text)]),
            author=episode.speaker if episode is not None else None,
            timestamp=when.isoformat() if when is not None else None,
            custom_metadata={SOURCE: {**source, "session": _session(episode)}},
        )
    stamp = held.get("timestamp")
    return MemoryEntry(
        id=episode.id,
        content=types.Content.model_validate(held["content"]),
        author=held.get("author"),
        # as ADK's services show an event's time: local, ISO 8601
        timestamp=datetime.fromtimestamp(stamp).isoformat()
        if isinstance(stamp, int | float)
        else stamp,
        custom_metadata={
            **(held.get("custom_metadata") or {}),
            SOURCE: {**source, "session": episode.session},
        },
    )


def _part(name: str) -> str:
    """One name of a namespace, its ``%`` and ``/`` percent-encoded."""
    return name.replace("%", "%25").replace("/", "%2F")


def _visible(content: types.Content | None) -> types.Content:
    """The content without its thoughts (a model's reasoning is not what it said)."""
    if content is None:
        return types.Content(parts=[])
    parts = [p for p in content.parts or [] if not p.thought]
    return content.model_copy(update={"parts": parts})


def _text(content: types.Content | None) -> str:
    """The visible text of a content, its text parts joined by spaces (as ADK's in-memory
    service reads an event)."""
    if content is None or not content.parts:
        return ""
    text = " ".join(p.text for p in content.parts if p.text and not p.thought)
    return text if text.strip() else ""


def _checked(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """Custom metadata, refused before anything is stored when it is not JSON."""
    if not metadata:
        return {}
    value = dict(metadata)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputValidationError(
            f"custom metadata that is not JSON ({exc}); nothing was stored"
        ) from exc
    return value


def _event_id(author: str | None, timestamp: float, content: dict[str, Any]) -> str:
    """An id for an event without one, the same each time the event is added."""
    payload = json.dumps([author, timestamp, content], sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]


def _session(episode: Episode | None) -> str | None:
    return episode.session if episode is not None else None


__all__ = ["MemstrataMemoryService"]
