"""A deterministic backend that replays a script: the one sanctioned fake for unit tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memstrata.llm.tools import Tool, ToolRound, native_text, openai_messages
from memstrata.llm.types import Completion, Message

ScriptStep = str | dict[str, Any] | Completion | BaseException | Callable[[list[Message]], str]


@dataclass(frozen=True)
class ScriptedRequest:
    """What the client sent, so tests can assert on prompts and retries."""

    messages: list[Message]
    json_schema: dict[str, Any] | None
    max_tokens: int
    temperature: float


class ScriptExhaustedError(RuntimeError):
    """The code under test made more calls than the test scripted."""


class ScriptedBackend:
    """Returns scripted responses in order: ``str`` as is, ``dict`` as JSON, a
    ``Completion`` as it is (a reply cut at the limit, with reasoning tokens), exceptions
    raised, callables called with the messages. Tokens are whitespace words, so
    accounting is non-zero and predictable."""

    def __init__(
        self,
        responses: Sequence[ScriptStep],
        *,
        name: str = "scripted",
        model: str = "scripted",
        native_tools: bool = False,
        context_tokens: int | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.context_tokens = context_tokens  # a model's window, as a GGUF backend has one
        #: with ``native_tools`` a step is an OpenAI-style message (``{"content",
        #: "tool_calls"}``) and tool rounds take the native path; else the JSON protocol
        self.supports_tools = native_tools
        self.tool_requests: list[list[dict[str, Any]]] = []
        self._script = list(responses)
        self._next = 0
        self.requests: list[ScriptedRequest] = []

    @property
    def remaining(self) -> int:
        return len(self._script) - self._next

    async def complete_tools(
        self,
        messages: list[Message],
        tools: list[Tool],
        rounds: list[ToolRound],
        *,
        allow_tools: bool,
        max_tokens: int,
        temperature: float,
    ) -> Completion:
        """A native tool round: the step is an OpenAI ``message`` (dict or JSON text)."""
        self.tool_requests.append(openai_messages(messages, rounds))
        done = await self.complete(
            messages, json_schema=None, max_tokens=max_tokens, temperature=temperature
        )
        try:
            message = json.loads(done.text)
        except ValueError:
            message = {"content": done.text}
        if not isinstance(message, dict):
            message = {"content": done.text}
        text = native_text(str(message.get("content") or ""), message.get("tool_calls") or [])
        return replace(done, text=text)

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
    ) -> Completion:
        self.requests.append(ScriptedRequest(list(messages), json_schema, max_tokens, temperature))
        if self._next >= len(self._script):
            raise ScriptExhaustedError(
                f"ScriptedBackend script exhausted: request #{len(self.requests)} "
                f"but only {len(self._script)} responses were scripted"
            )
        step = self._script[self._next]
        self._next += 1
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, Completion):
            return step
        if isinstance(step, dict):
            text = json.dumps(step)
        elif isinstance(step, str):
            text = step
        else:
            text = step(list(messages))
        return Completion(
            text=text,
            prompt_tokens=sum(len(m.content.split()) for m in messages),
            completion_tokens=len(text.split()),
            model=self.model,
        )
