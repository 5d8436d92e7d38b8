"""The OpenAI Agents SDK's session memory, kept in memstrata, and a tool to recall from it.

* :class:`MemstrataSession` follows the SDK's ``Session`` protocol (``get_items``,
  ``add_items``, ``pop_item``, ``clear_session``): each item of a conversation is an
  episode of the namespace in the session ``session_id``, with its role, its text for
  search and the whole item in its metadata, so the history reads back as it was given;
* :func:`recall_tool` is a ``function_tool`` the agent calls to search everything the
  namespace holds, every session's turns included; each memory it returns names the
  episodes it rests on.

Both take any memstrata client (docs/integrations.md)::

    from agents import Agent, Runner
    from memstrata import Memory
    from memstrata.integrations.openai_agents import MemstrataSession, recall_tool

    memory = Memory.open("memory.db")
    agent = Agent(name="assistant", tools=[recall_tool(memory, namespace="ana")])
    session = MemstrataSession("chat-1", memory, namespace="ana")
    result = await Runner.run(agent, "Where did I move last year?", session=session)
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any, cast

from agents import FunctionTool, RunContextWrapper, TResponseInputItem, UserError, function_tool
from agents.memory import SessionSettings, await_session_mutation
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit

from memstrata.errors import NamespaceNotFoundError
from memstrata.integrations.bridge import Bridge, episodes, held, memory_of
from memstrata.models import Episode

#: the key of an episode's metadata that holds the whole SDK item
FIELD = "openai_agents"
#: the recall tool's name, by default
RECALL = "recall_memories"
#: the message roles an episode written by other means may read back as
ROLES = ("user", "assistant", "system", "developer")
PAGE = 1000

Namespace = str | Callable[[RunContextWrapper[Any]], str] | None


class MemstrataSession:
    """One conversation of the Agents SDK as episodes of a memstrata namespace.

    ``session_id`` names the conversation (the episodes' session); ``memory`` is any
    memstrata client; ``namespace`` the memstrata namespace (None: the client's default),
    for instance one per user, so all of a user's conversations are one memory that
    :func:`recall_tool` searches. ``session_settings`` is the SDK's (its ``limit`` is the
    default of :meth:`get_items`). ``recall_tools`` names the tools whose outputs are
    memories read back: such an output is searchable by the ids it returned, not by the
    texts it copied, so a later search finds the original turns rather than the copy."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        memory: Any,
        *,
        namespace: str | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        recall_tools: Sequence[str] = (RECALL,),
    ) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise UserError(f"a session id is a non-empty string, not {session_id!r}")
        self.session_id = session_id
        self.namespace = held(namespace, UserError)
        self.session_settings = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        self.recall_tools = frozenset(recall_tools)
        self._bridge = Bridge(memory)

    # the SDK's Session protocol ----------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The conversation's items in the order they were added; with a limit, the latest
        ``limit`` of them (none for a limit under 1, as the protocol says)."""
        wanted = resolve_session_limit(limit, self.session_settings)
        if wanted is not None and wanted < 1:
            return []
        items = [item_of(e) for e in await self._bridge.arun(self._episodes())]
        return items if wanted is None else items[-wanted:]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """All the items are checked (JSON, a text memstrata takes) before any is stored."""
        if not items:
            return
        episodes = self._episodes_of(items)
        client = self._bridge.client
        write = client.add_many(episodes, namespace=self.namespace)
        await await_session_mutation(self._bridge.arun(write))

    async def pop_item(self) -> TResponseInputItem | None:
        """The latest item, removed; None when the conversation is empty."""
        return await await_session_mutation(self._bridge.arun(self._pop()))

    async def clear_session(self) -> None:
        """Deletes the conversation's episodes, as a delete does everywhere in memstrata."""
        await await_session_mutation(self._bridge.arun(self._clear()))

    # memstrata ---------------------------------------------------------------------------
    async def _episodes(self) -> list[Episode]:
        found = episodes(self._bridge.client, self.namespace, self.session_id, page=PAGE)
        return [e async for e in found]

    def _episodes_of(self, items: list[TResponseInputItem]) -> list[dict[str, Any]]:
        # copies as JSON reads them back (tuples as lists); NaN is no JSON value either
        held = [json.loads(json.dumps(item, allow_nan=False)) for item in items]
        calls = {i.get("call_id"): i.get("name") for i in held if i.get("type") == "function_call"}
        out = []
        for item in held:
            kind = item.get("type")
            tool = calls.get(item.get("call_id")) if kind == "function_call_output" else None
            text = recalled_ids(item) if tool in self.recall_tools else text_of(item)
            out.append(
                {
                    "id": uuid.uuid4().hex,
                    "text": text,
                    "role": role_of(item),
                    "speaker": item.get("name") if kind == "function_call" else tool,
                    "session": self.session_id,
                    "metadata": {FIELD: item},
                }
            )
        return out

    async def _pop(self) -> TResponseInputItem | None:
        """Another caller may delete the latest episode first: then the next is tried."""
        while True:
            episodes = await self._episodes()
            if not episodes:
                return None
            last = episodes[-1]
            if await self._bridge.client.delete([last.id], namespace=self.namespace):
                return item_of(last)

    async def _clear(self) -> None:
        ids = [e.id for e in await self._episodes()]
        if ids:
            await self._bridge.client.delete(ids, namespace=self.namespace)


def _texts(value: Any) -> list[str]:
    """The texts of an item's content or output: a string, or parts with a text."""
    if isinstance(value, str):
        return [value]
    out: list[str] = []
    for part in value if isinstance(value, list) else []:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict):
            text = part.get("text") or part.get("refusal") or part.get("transcript")
            out.extend([text] if isinstance(text, str) else [])
    return out


def text_of(item: dict[str, Any]) -> str:
    """What an item says, for search: a message's text, a call's name and arguments, an
    output, a reasoning summary; an item with no text at all is searched by its JSON."""
    kind = item.get("type", "message")
    if kind == "message" or "role" in item:
        texts = _texts(item.get("content"))
    elif "arguments" in item or kind == "custom_tool_call":
        texts = [f"{item.get('name', kind)}({item.get('arguments', item.get('input', ''))})"]
    elif "output" in item:
        texts = _texts(item["output"])
    else:
        texts = _texts(item.get("summary")) + _texts(item.get("content"))
    text = "\n".join(t for t in texts if t.strip())
    return text or json.dumps(item, ensure_ascii=False)


def role_of(item: dict[str, Any]) -> str:
    """A message's role; a tool's output is the tool's, anything else the model's."""
    role = item.get("role")
    if isinstance(role, str):
        return role
    return "tool" if str(item.get("type", "")).endswith("_output") else "assistant"


def item_of(episode: Episode) -> TResponseInputItem:
    """An episode as the item it was, or, written by other means, as a message with its
    text and role (a turn without one of the SDK's roles is the user's)."""
    held = episode.metadata.get(FIELD)
    if isinstance(held, dict):
        return cast(TResponseInputItem, held)
    role = episode.role if episode.role in ROLES else "user"
    return cast(TResponseInputItem, {"role": role, "content": episode.text})


def recalled_ids(item: dict[str, Any]) -> str:
    """The searchable text of a recall's output: the episodes it named, not their texts."""
    try:
        memories = json.loads(item.get("output") or "")["memories"]
        ids = [s for m in memories for s in m["sources"]]
    except (TypeError, ValueError, KeyError):
        return text_of(item)
    return ("recalled episodes " + ", ".join(dict.fromkeys(ids))) if ids else "recalled nothing"


def recall_tool(
    memory: Any,
    *,
    namespace: Namespace = None,
    k: int = 4,
    recipe: str | None = None,
    name: str = RECALL,
) -> FunctionTool:
    """A tool that searches memstrata for what the agent was told before.

    ``namespace`` is the one searched: a name, a function of the run's context (to find
    the user of a run: ``lambda ctx: ctx.context.user_id``) or None (the client's
    default); ``k`` the most memories returned; ``recipe`` the memstrata recipe. The
    tool's output is JSON, ``{"memories": [{"text", "kind", "id", "score", "sources",
    "session"}]}``, best first: ``sources`` are the episode ids the memory rests on, and
    ``session`` the conversation of a turn (the one under way included). An empty query
    is answered with an ``error`` for the model to correct; a namespace memstrata cannot
    hold (the SDK's ``UserError``) or a store that fails ends the run instead of being
    hidden from the model as the SDK hides a tool's errors: they are the application's."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UserError(f"k is a positive number of memories, not {k!r}")
    fixed = None if callable(namespace) else held(namespace, UserError)
    bridge = Bridge(memory)

    async def recall(ctx: RunContextWrapper[Any], query: str) -> str:
        """Search the long-term memory of earlier conversations.

        Args:
            query: what to look for, in a few words or a question.
        """
        where = held(namespace(ctx), UserError) if callable(namespace) else fixed
        if not query.strip():
            return json.dumps({"memories": [], "error": "the query is empty: say what to recall"})
        try:
            found = await bridge.arun(
                bridge.client.search(query, namespace=where, k=k, recipe=recipe, max_tokens=None)
            )
        except NamespaceNotFoundError:  # nothing remembered there yet
            return json.dumps({"memories": []})
        memories = [memory_of(hit) for hit in found.hits[:k]]
        return json.dumps({"memories": memories}, ensure_ascii=False)

    return function_tool(recall, name_override=name, failure_error_function=None)


__all__ = ["MemstrataSession", "recall_tool"]
