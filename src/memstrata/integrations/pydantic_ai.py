"""memstrata as the long-term memory of a pydantic-ai agent.

:class:`MemstrataMemory` gives an agent two things, each usable alone:

* :meth:`~MemstrataMemory.toolset`, a ``FunctionToolset`` with ``remember`` (store a
  fact as an episode of the namespace, in the run's conversation) and ``recall`` (search
  the namespace; each memory names the episodes it rests on);
* :meth:`~MemstrataMemory.recall_into`, a history processor: before the model answers a
  new user prompt, it searches memstrata with the prompt and puts what it found in a
  system prompt part beside it, with the hits' ids and sources in the part's metadata.

``capabilities()`` is both, as the agent takes them::

    from pydantic_ai import Agent
    from memstrata import Memory
    from memstrata.integrations.pydantic_ai import MemstrataMemory

    memory = MemstrataMemory(Memory.open("memory.db"), namespace=lambda ctx: ctx.deps.user)
    agent = Agent("openai:gpt-5", deps_type=User, capabilities=memory.capabilities())
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, ProcessHistory, Toolset
from pydantic_ai.exceptions import ModelRetry, UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    SystemPromptPart,
    TextContent,
    UserPromptPart,
)
from pydantic_ai.toolsets import FunctionToolset

from memstrata.errors import NamespaceNotFoundError
from memstrata.integrations.bridge import Bridge, held, memory_of
from memstrata.models import Hit

#: the key of an episode's metadata, and of a system prompt part's, that is the adapter's
FIELD = "pydantic_ai"
#: what the recalled memories' system prompt starts with
HEADING = "What you remember from earlier conversations, best first:"

Namespace = str | Callable[[RunContext[Any]], str] | None


class MemstrataMemory:
    """A memstrata namespace as an agent's memory.

    ``memory`` is any memstrata client; ``namespace`` the one used: a name, a function of
    the run's context (one namespace per user: ``lambda ctx: ctx.deps.user_id``) or None
    (the client's default). The run's ``conversation_id`` is the session of what
    ``remember`` stores. ``k`` is the most memories a recall returns; ``recipe`` the
    memstrata recipe; ``metadata`` a function of the run's context whose JSON object is
    kept with each remembered episode (under ``pydantic_ai``, beside the run's ids)."""

    def __init__(
        self,
        memory: Any,
        *,
        namespace: Namespace = None,
        k: int = 4,
        recipe: str | None = None,
        metadata: Callable[[RunContext[Any]], dict[str, Any]] | None = None,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise UserError(f"k is a positive number of memories, not {k!r}")
        self._bridge = Bridge(memory)
        self._namespace = namespace if callable(namespace) else held(namespace, UserError)
        self.k = k
        self.recipe = recipe
        self.metadata = metadata

    def namespace(self, ctx: RunContext[Any]) -> str | None:
        """The namespace of this run."""
        return (
            held(self._namespace(ctx), UserError) if callable(self._namespace) else self._namespace
        )

    # tools ---------------------------------------------------------------------------------
    def toolset(self) -> FunctionToolset[Any]:
        """``remember`` and ``recall`` as a toolset. Its calls run one at a time, in the
        order the model made them, so a recall after a remember in one response finds it."""
        return FunctionToolset([self.remember, self.recall], sequential=True)

    async def remember(self, ctx: RunContext[Any], text: str) -> dict[str, str]:
        """Store something worth knowing in later conversations.

        Args:
            text: the fact to keep, in a full sentence.
        """
        if not text.strip():
            raise ModelRetry("the text to remember is empty: say what to keep")
        held = {
            **(self.metadata(ctx) if self.metadata else {}),
            "run_id": ctx.run_id,
            "conversation_id": ctx.conversation_id,
            "tool_call_id": ctx.tool_call_id,
        }
        json.dumps(held, allow_nan=False)  # not JSON: refused before anything is stored
        namespace = self.namespace(ctx)
        episode = await self._bridge.arun(
            self._bridge.client.add(
                text,
                namespace=namespace,
                session=ctx.conversation_id,
                metadata={FIELD: held},
            )
        )
        return {"id": episode.id}

    async def recall(self, ctx: RunContext[Any], query: str) -> dict[str, list[dict[str, Any]]]:
        """Search what was remembered in earlier conversations.

        Args:
            query: what to look for, in a few words or a question.
        """
        if not query.strip():
            raise ModelRetry("the query is empty: say what to recall")
        return {"memories": [memory_of(h) for h in await self._search(ctx, query)]}

    async def _search(self, ctx: RunContext[Any], query: str) -> list[Hit]:
        namespace = self.namespace(ctx)
        search = self._bridge.client.search(
            query, namespace=namespace, k=self.k, recipe=self.recipe, max_tokens=None
        )
        try:
            found = await self._bridge.arun(search)
        except NamespaceNotFoundError:  # nothing remembered there yet
            return []
        return list(found.hits[: self.k])

    # the history processor -----------------------------------------------------------------
    async def recall_into(
        self, ctx: RunContext[Any], messages: list[ModelMessage]
    ) -> list[ModelMessage]:
        """``messages`` with what memstrata recalls for the newest user prompt beside it.

        Only a request that carries a user prompt is searched for, once: the requests
        that return tools' results to the model, and the request already given its
        memories, pass unchanged (the processor runs before every model request, and what
        it returns becomes the run's history)."""
        last = messages[-1] if messages else None
        if not isinstance(last, ModelRequest) or any(_is_recall(p) for p in last.parts):
            return messages
        prompt = "\n".join(_prompt_text(p) for p in last.parts if isinstance(p, UserPromptPart))
        if not prompt.strip():
            return messages
        hits = await self._search(ctx, prompt)
        if not hits:
            return messages
        lines = [f"- {h.text} (episodes {', '.join(h.sources)})" for h in hits]
        part = SystemPromptPart(
            "\n".join([HEADING, *lines]),
            metadata={FIELD: {"query": prompt, "memories": [memory_of(h) for h in hits]}},
        )
        return [*messages[:-1], dataclasses.replace(last, parts=[part, *last.parts])]

    def capabilities(self) -> list[AbstractCapability[Any]]:
        """The toolset and the history processor, for ``Agent(capabilities=...)``."""
        return [Toolset(self.toolset()), ProcessHistory(self.recall_into)]


def _prompt_text(part: UserPromptPart) -> str:
    """The text of a user prompt (of its text items, when it is several)."""
    if isinstance(part.content, str):
        return part.content
    texts = []
    for item in part.content:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, TextContent):
            texts.append(item.content)
    return "\n".join(texts)


def _is_recall(part: Any) -> bool:
    return isinstance(part, SystemPromptPart) and FIELD in (part.metadata or {})


__all__ = ["MemstrataMemory"]
