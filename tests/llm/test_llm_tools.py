"""Tool calling through LLMClient: the native protocol (OpenAI ``tools``/``tool_calls``),
the JSON protocol for backends without it, the round cap, per-round accounting, and a
real HTTP server that speaks tools or refuses them."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memstrata.llm import (
    LLMClient,
    LLMOutputError,
    MemoryUsageSink,
    Message,
    OpenAICompatibleBackend,
    ScriptedBackend,
    Tool,
    ToolCall,
    run_tool_loop,
)
from memstrata.llm.fence import fence

LOOKUP = Tool(
    name="lookup",
    description="Look a key up.",
    parameters={
        "type": "object",
        "properties": {"key": {"type": "string"}},
        "required": ["key"],
    },
)
FINAL = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
PROMPT = [Message(role="user", content="What is the value of a?")]


def table(call: ToolCall) -> str:
    return {"a": "alpha", "b": "beta"}[call.arguments["key"]]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_json_protocol_calls_a_tool_then_answers() -> None:
    backend = ScriptedBackend(
        [
            {"tool": "lookup", "arguments": {"key": "a"}},
            {"tool": "final", "arguments": {"answer": "alpha"}},
        ]
    )
    sink = MemoryUsageSink()
    client = LLMClient(backend, usage=sink)
    result = run(
        run_tool_loop(client, PROMPT, [LOOKUP], table, stage="t.answer", final_schema=FINAL)
    )
    assert json.loads(result.content) == {"answer": "alpha"}
    assert [r.results for r in result.rounds] == [["alpha"]]
    assert not result.capped
    # the tools are described in a system message and the answer is schema-constrained
    first = backend.requests[0]
    assert first.messages[0].role == "system" and "lookup" in first.messages[0].content
    assert [a["properties"]["tool"]["const"] for a in first.json_schema["anyOf"]] == [
        "lookup",
        "final",
    ]
    # the second round sees the first call and its result as chat turns
    second = backend.requests[1].messages
    assert second[-2].role == "assistant" and json.loads(second[-2].content)["tool"] == "lookup"
    assert second[-1].content == "Result of lookup:\n" + fence("alpha")
    # one accounting record per round, with its tokens, also returned per round
    assert [r.stage for r in sink.records] == ["t.answer", "t.answer"]
    assert [u["prompt_tokens"] for u in result.usage] == [r.prompt_tokens for r in sink.records]
    assert all(u["prompt_tokens"] > 0 for u in result.usage)
    assert result.usage[1]["prompt_tokens"] > result.usage[0]["prompt_tokens"]


@pytest.mark.parametrize(
    ("bad", "quoted"),
    [
        ("not json at all {", "tool"),
        ({"tool": "delete_everything", "arguments": {}}, "unknown tool 'delete_everything'"),
    ],
)
def test_json_protocol_retries_unknown_tools_and_broken_json(bad: object, quoted: str) -> None:
    backend = ScriptedBackend([bad, {"tool": "final", "arguments": {"answer": "x"}}])
    client = LLMClient(backend, max_retries=2)
    result = run(run_tool_loop(client, PROMPT, [LOOKUP], table, stage="t"))
    assert json.loads(result.content) == {"answer": "x"}
    # the validation error is quoted back to the model
    assert quoted in backend.requests[1].messages[-1].content


def test_json_protocol_gives_up_with_a_clear_error() -> None:
    client = LLMClient(ScriptedBackend(["{", "{", "{"]), max_retries=2)
    with pytest.raises(LLMOutputError, match="invalid output after 2 attempts"):
        run(run_tool_loop(client, PROMPT, [LOOKUP], table, stage="t"))


def test_native_protocol_sends_tool_messages() -> None:
    backend = ScriptedBackend(
        [
            {
                "content": "",
                "tool_calls": [
                    {"id": "c1", "function": {"name": "lookup", "arguments": '{"key": "a"}'}},
                    {"id": "c2", "function": {"name": "lookup", "arguments": "{broken"}},
                ],
            },
            {"content": '{"answer": "alpha"}'},
        ],
        native_tools=True,
    )
    sink = MemoryUsageSink()
    result = run(run_tool_loop(LLMClient(backend, usage=sink), PROMPT, [LOOKUP], table, stage="t"))
    assert result.content == '{"answer": "alpha"}'
    assert result.replies[0].mode == "native"
    # two calls in one round: one ran, one had unparsable arguments and got an error back
    assert result.rounds[0].results[0] == "alpha"
    assert result.rounds[0].results[1].startswith("error: arguments are not a JSON object")
    wire = backend.tool_requests[1]
    assert wire[-3]["role"] == "assistant" and wire[-3]["tool_calls"][0]["id"] == "c1"
    assert [m["role"] for m in wire[-2:]] == ["tool", "tool"]
    assert wire[-2] == {"role": "tool", "tool_call_id": "c1", "content": fence("alpha")}
    assert len(sink.records) == 2


@pytest.mark.parametrize("native", [False, True])
def test_the_round_cap_forces_a_final_answer(native: bool) -> None:
    def step(messages: list[Message]) -> str:
        if native:
            call = {"id": "c", "function": {"name": "lookup", "arguments": '{"key": "b"}'}}
            return json.dumps({"content": "", "tool_calls": [call]})
        if "No more tool calls" in messages[-1].content:
            return json.dumps({"tool": "final", "arguments": {"answer": "gave up"}})
        return json.dumps({"tool": "lookup", "arguments": {"key": "b"}})

    backend = ScriptedBackend([step] * 10, native_tools=native)
    result = run(
        run_tool_loop(LLMClient(backend), PROMPT, [LOOKUP], table, stage="t", max_rounds=3)
    )
    assert result.capped
    assert len(result.rounds) == 3 and len(result.replies) == 4
    if native:  # tools are still declared, with tool_choice none on the last call
        assert result.content == ""
    else:
        assert json.loads(result.content) == {"answer": "gave up"}
        assert "anyOf" not in backend.requests[-1].json_schema  # only the final form is left


def test_unknown_keys_in_a_tool_become_an_error_result() -> None:
    backend = ScriptedBackend(
        [
            {"tool": "lookup", "arguments": {"key": "zzz"}},
            {"tool": "final", "arguments": {"answer": "none"}},
        ]
    )
    result = run(run_tool_loop(LLMClient(backend), PROMPT, [LOOKUP], table, stage="t"))
    assert result.rounds[0].results == ["error: 'zzz'"]


# a real OpenAI-compatible server ----------------------------------------------------------
class _ToolServer(BaseHTTPRequestHandler):
    refuse_tools = False
    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        if "tools" in body and self.refuse_tools:
            self._send(400, {"error": {"message": "tools are not supported by this server"}})
            return
        if "tools" in body:
            done = any(m["role"] == "tool" for m in body["messages"])
            message: dict[str, Any] = (
                {"role": "assistant", "content": '{"answer": "alpha"}'}
                if done
                else {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "lookup", "arguments": '{"key": "a"}'},
                        }
                    ],
                }
            )
        else:  # the JSON protocol
            said = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
            reply = (
                {"tool": "final", "arguments": {"answer": "alpha"}}
                if said.startswith("Result of lookup")
                else {"tool": "lookup", "arguments": {"key": "a"}}
            )
            message = {"role": "assistant", "content": json.dumps(reply)}
        self._send(
            200,
            {
                "model": "m",
                "choices": [{"message": message}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 3},
            },
        )

    def _send(self, status: int, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_ToolServer]]]:
    handler = type("H", (_ToolServer,), {"bodies": [], "refuse_tools": False})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("refuse", [False, True])
def test_openai_server_native_or_fallback(
    server: tuple[str, type[_ToolServer]], refuse: bool
) -> None:
    url, handler = server
    handler.refuse_tools = refuse
    backend = OpenAICompatibleBackend(url, "m")
    sink = MemoryUsageSink()
    result = run(
        run_tool_loop(
            LLMClient(backend, usage=sink, max_retries=0),
            PROMPT,
            [LOOKUP],
            table,
            stage="t",
            final_schema=FINAL,
        )
    )
    assert json.loads(result.content) == {"answer": "alpha"}
    assert result.rounds[0].results == ["alpha"]
    assert [r.prompt_tokens for r in result.replies] == [11, 11]
    if refuse:
        assert backend.supports_tools is False
        assert [r.mode for r in result.replies] == ["json", "json"]
        assert "tools" not in handler.bodies[-1]
    else:
        assert [r.mode for r in result.replies] == ["native", "native"]
        assert handler.bodies[0]["tools"][0]["function"]["name"] == "lookup"
        tool_msg = handler.bodies[1]["messages"][-1]
        assert tool_msg == {"role": "tool", "tool_call_id": "call_1", "content": fence("alpha")}
