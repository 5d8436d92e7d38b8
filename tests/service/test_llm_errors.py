"""A dead or failing LLM behind the service: `ask` answers 503 `llm_unavailable` when the
model server cannot be reached and 502 `llm_bad_reply` when it answers with an error,
over REST and as MCP tool errors, never a 500."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from service_helpers import serving
from tests.llm.fake_openai import FakeOpenAI, Reply

from memstrata.config import Config

TURNS = [{"id": "l1", "text": "Maya flies to Lisbon in June.", "speaker": "Maya"}]


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: nothing listens there


def _config(db: Path, base_url: str) -> Config:
    return Config.load(
        store=str(db),
        **{
            "build.mode": "queue",
            "llm.kind": "openai",
            "llm.base_url": base_url,
            "llm.model": "absent",
            "llm.max_retries": 0,
            "llm.timeout_s": 5,
        },
    )


async def _ask_tool(url: str) -> Any:
    async with Client(streamable_http_client(url, http_client=httpx2.AsyncClient())) as client:
        return await client.call_tool("ask_memory", {"question": "Where does Maya fly?"})


def _ask(base_url: str, db: Path) -> tuple[int, dict[str, Any], str]:
    """The REST answer's status and error, and the MCP tool's error text."""
    with serving(_config(db, base_url), workers=0) as client:
        assert (
            client.post("/namespaces/default/episodes", json={"episodes": TURNS}).status_code == 200
        )
        asked = client.post("/namespaces/default/ask", json={"question": "Where does Maya fly?"})
        mcp = str(client.base_url).rstrip("/").removesuffix("/v1") + "/mcp/"
        tool = asyncio.run(_ask_tool(mcp))
        assert tool.is_error
        return asked.status_code, asked.json()["error"], tool.content[0].text


def test_an_unreachable_llm_is_503(tmp_path: Path) -> None:
    status, error, tool = _ask(f"http://127.0.0.1:{_dead_port()}/v1", tmp_path / "d.db")
    assert (status, error["code"]) == (503, "llm_unavailable"), error
    assert "Traceback" not in error["message"]
    assert "llm_unavailable: cannot reach" in tool, tool


def test_an_llm_that_answers_with_errors_is_502(tmp_path: Path) -> None:
    with FakeOpenAI(lambda _: Reply(status=500, content="the model crashed")) as url:
        status, error, tool = _ask(url, tmp_path / "e.db")
    assert (status, error["code"]) == (502, "llm_bad_reply"), error
    assert "llm_bad_reply: HTTP 500" in tool, tool


def test_a_model_the_breaker_stopped_calling_is_still_503(tmp_path: Path) -> None:
    """Once the client's breaker has stopped calling a dead server, its refusals (no
    request sent) are the same 503 ``llm_unavailable``, not a 502."""
    config = _config(tmp_path / "b.db", f"http://127.0.0.1:{_dead_port()}/v1")
    config = config.with_overrides(**{"llm.breaker_failures": 1})
    with serving(config, workers=0) as client:
        client.post("/namespaces/default/episodes", json={"episodes": TURNS})
        codes = []
        for _ in range(3):
            asked = client.post("/namespaces/default/ask", json={"question": "Where?"})
            codes.append((asked.status_code, asked.json()["error"]["code"]))
            last = asked.json()["error"]["message"]
    assert codes == [(503, "llm_unavailable")] * 3
    assert "not sent" in last, last  # the breaker refused it: no request was made
