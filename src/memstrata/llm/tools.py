"""Tool calling: one round at a time through :class:`LLMClient`, and a bounded loop.

Two wire protocols, one interface:

* **native**: backends that set ``supports_tools = True`` and implement
  ``complete_tools`` (the OpenAI-compatible one: ``tools`` in the request,
  ``tool_calls`` in the answer) get the tools as function declarations. Their
  ``Completion.text`` is the canonical JSON of :class:`ToolReply`'s content and calls, so
  the response cache and the accounting treat it as any other answer.
* **json**: every other backend (the in-process GGUF model, servers that refuse
  ``tools``) is told the tools in a system message and answers one JSON object per
  round, ``{"tool": NAME, "arguments": {...}}``, constrained by a schema (a grammar on
  llama.cpp); ``{"tool": "final", "arguments": {...}}`` ends the loop.

Tool results are fenced (:mod:`memstrata.llm.fence`) in both protocols: a lookup returns
stored text. Every round is one client call: one accounting record (stage, prompt and completion
tokens), and its tokens are also returned in :class:`ToolReply` so a caller can report
them per round.
"""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from memstrata.llm.fence import FENCE_NOTE, fence
from memstrata.llm.schema import repair_json
from memstrata.llm.types import LLMBackendError, LLMOutputError, Message

if TYPE_CHECKING:
    from memstrata.llm.base import LLMClient

FINAL = "final"
#: the paper's cap on the answer stage's tool rounds (MindGraph, section 4.2)
MAX_ROUNDS = 40


class Tool(BaseModel):
    """A function the model may call: name, description, JSON schema of the arguments."""

    name: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})

    def openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ToolCall(BaseModel):
    """One call the model asked for. ``error`` is set when its arguments were not a JSON
    object; the caller answers the model with it instead of running the tool."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class ToolRound(BaseModel):
    """A round of the conversation: what the model said and called, and the results."""

    content: str = ""
    calls: list[ToolCall] = Field(default_factory=list)
    results: list[str] = Field(default_factory=list)


class ToolReply(BaseModel):
    """The model's answer to one round: tool calls, or final content (no calls)."""

    content: str = ""
    calls: list[ToolCall] = Field(default_factory=list)
    mode: Literal["native", "json"] = "json"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False


class ToolsUnsupportedError(LLMBackendError):
    """The server refused the ``tools`` parameter; the client switches to the JSON
    protocol for this backend."""


class ToolLoopResult(BaseModel):
    """The final content, every round run, and whether the round cap cut the loop."""

    content: str
    rounds: list[ToolRound]
    replies: list[ToolReply]
    capped: bool = False

    @property
    def usage(self) -> list[dict[str, int]]:
        return [
            {"round": i, "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens}
            for i, r in enumerate(self.replies)
        ]


# the JSON protocol -----------------------------------------------------------------------
def json_protocol(tools: list[Tool], final_schema: dict[str, Any] | None) -> str:
    """The system message that stands in for native function calling."""
    lines = [
        "You can call tools. Each reply is exactly one JSON object, either a tool call",
        '  {"tool": "<tool name>", "arguments": {...}}',
        "or, when you are done, your final answer",
        '  {"tool": "final", "arguments": <the final JSON object>}',
        "Tool results come fenced. " + FENCE_NOTE,
        "",
        "Tools:",
    ]
    for t in tools:
        lines.append(f"- {t.name}: {t.description}")
        lines.append(f"  arguments schema: {json.dumps(t.parameters, ensure_ascii=False)}")
    if final_schema is not None:
        lines.append(f"Final answer schema: {json.dumps(final_schema, ensure_ascii=False)}")
    return "\n".join(lines)


def json_schema(
    tools: list[Tool], final_schema: dict[str, Any] | None, allow_tools: bool = True
) -> dict[str, Any]:
    """One alternative per tool (its name as a constant) and one for the final answer."""

    def alt(name: str, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"tool": {"const": name}, "arguments": params},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }

    alts = [alt(t.name, t.parameters) for t in tools] if allow_tools else []
    alts.append(alt(FINAL, final_schema or {"type": "object"}))
    return alts[0] if len(alts) == 1 else {"anyOf": alts}


def render_rounds(rounds: list[ToolRound]) -> list[Message]:
    """Past rounds as plain chat turns for the JSON protocol."""
    out: list[Message] = []
    for r in rounds:
        for call, result in zip(r.calls, r.results, strict=True):
            said = {"tool": call.name, "arguments": call.arguments}
            out.append(Message(role="assistant", content=json.dumps(said, ensure_ascii=False)))
            out.append(Message(role="user", content=f"Result of {call.name}:\n{fence(result)}"))
    return out


def parse_json_reply(text: str, tools: list[Tool], allow_tools: bool = True) -> ToolReply:
    """A JSON-protocol answer as a reply: a call of a known tool, or the final content."""
    data = repair_json(text)
    if not isinstance(data, dict) or "tool" not in data:
        raise LLMOutputError('expected {"tool": ..., "arguments": {...}}', raw_text=text)
    name, args = data.get("tool"), data.get("arguments", {})
    if not isinstance(args, dict):
        raise LLMOutputError('"arguments" must be a JSON object', raw_text=text)
    if name == FINAL:
        return ToolReply(content=json.dumps(args, ensure_ascii=False), mode="json")
    known = [t.name for t in tools] if allow_tools else []
    if name not in known:
        raise LLMOutputError(f"unknown tool {name!r}; use one of {known + [FINAL]}", raw_text=text)
    return ToolReply(calls=[ToolCall(id="call_0", name=str(name), arguments=args)], mode="json")


# the native protocol ---------------------------------------------------------------------
def openai_messages(messages: list[Message], rounds: list[ToolRound]) -> list[dict[str, Any]]:
    """Chat messages with past rounds as OpenAI ``tool_calls`` and ``tool`` results."""
    out: list[dict[str, Any]] = [m.model_dump() for m in messages]
    for r in rounds:
        out.append(
            {
                "role": "assistant",
                "content": r.content or None,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": json.dumps(c.arguments, ensure_ascii=False),
                        },
                    }
                    for c in r.calls
                ],
            }
        )
        for call, result in zip(r.calls, r.results, strict=True):
            out.append({"role": "tool", "tool_call_id": call.id, "content": fence(result)})
    return out


def native_text(content: str, raw_calls: list[dict[str, Any]]) -> str:
    """An OpenAI ``message`` (content, ``tool_calls``) as canonical JSON, arguments parsed
    where they are JSON (else kept as text and flagged by :func:`parse_native_reply`)."""
    calls = []
    for i, raw in enumerate(raw_calls):
        fn = raw.get("function") or {}
        args: Any = fn.get("arguments") or "{}"
        if isinstance(args, str):
            with contextlib.suppress(ValueError):
                args = json.loads(args)
        calls.append(
            {"id": str(raw.get("id") or f"call_{i}"), "name": fn.get("name"), "args": args}
        )
    return json.dumps({"content": content, "tool_calls": calls}, ensure_ascii=False)


def parse_native_reply(text: str) -> ToolReply:
    try:
        data = json.loads(text)
        content, raw = str(data.get("content") or ""), list(data.get("tool_calls") or [])
    except (ValueError, AttributeError, TypeError) as exc:
        raise LLMOutputError(f"bad native tool answer: {exc}", raw_text=text) from exc
    calls = []
    for c in raw:
        args = c.get("args")
        ok = isinstance(args, dict)
        calls.append(
            ToolCall(
                id=str(c.get("id")),
                name=str(c.get("name")),
                arguments=args if ok else {},
                error=None if ok else f"arguments are not a JSON object: {str(args)[:200]}",
            )
        )
    return ToolReply(content=content, calls=calls, mode="native")


# the loop --------------------------------------------------------------------------------
Execute = Callable[[ToolCall], "Awaitable[str] | str"]


async def run_tool_loop(
    client: LLMClient,
    messages: list[Message],
    tools: list[Tool],
    execute: Execute,
    *,
    stage: str,
    final_schema: dict[str, Any] | None = None,
    max_rounds: int = MAX_ROUNDS,
    max_tokens: int = 1024,
) -> ToolLoopResult:
    """Call tools until the model answers without calls, at most ``max_rounds`` rounds
    of calls; at the cap one last call without tools asks for the final answer."""
    rounds: list[ToolRound] = []
    replies: list[ToolReply] = []
    while True:
        allow = len(rounds) < max_rounds
        reply = await client.tool_step(
            messages,
            tools,
            rounds,
            stage=stage,
            final_schema=final_schema,
            allow_tools=allow,
            max_tokens=max_tokens,
        )
        replies.append(reply)
        if not reply.calls or not allow:
            return ToolLoopResult(
                content=reply.content, rounds=rounds, replies=replies, capped=not allow
            )
        results = []
        for call in reply.calls:
            if call.error is not None:
                results.append(f"error: {call.error}")
                continue
            try:
                value = execute(call)
                results.append(str(await value if inspect.isawaitable(value) else value))
            except (KeyError, ValueError, TypeError) as exc:
                results.append(f"error: {exc}")
        rounds.append(ToolRound(content=reply.content, calls=reply.calls, results=results))
