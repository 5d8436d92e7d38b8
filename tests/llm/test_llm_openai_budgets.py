"""The OpenAI-compatible backend over a real loopback HTTP server (``FakeOpenAI``): the
configured reasoning effort goes in the request body, the reasoning tokens a server
reports are counted apart, and a reply the server cut at ``max_tokens`` is asked again
with twice the room in the next request's body, within the configured output limit."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply
from pydantic import BaseModel, Field

from memstrata.config import Config
from memstrata.factory import make_llm
from memstrata.llm import LLMClient, MemoryUsageSink, Message, OpenAICompatibleBackend
from memstrata.llm.base import request_hash
from memstrata.llm.tools import Tool, ToolRound
from memstrata.llm.types import LLMError
from memstrata.store import SQLiteStore

PROMPT = [Message(role="user", content="Who moved where?")]
MOVED = json.dumps({"facts": ["Maya moved to Lisbon.", "Ben stayed in Porto."]})


class Facts(BaseModel):
    facts: list[str] = Field(default_factory=list, max_length=8)


def configured(url: str, **llm: Any) -> LLMClient:
    settings = {"llm.kind": "openai", "llm.base_url": url, "llm.model": "m", **llm}
    client = make_llm(Config.load(env={}, **settings), SQLiteStore(":memory:"))
    assert client is not None
    return client


def facts(client: LLMClient, max_tokens: int = 240) -> Facts:
    async def run() -> Facts:
        try:
            return await client.structured(PROMPT, Facts, stage="s", max_tokens=max_tokens)
        finally:
            await client.backend.aclose()  # type: ignore[attr-defined]

    return asyncio.run(run())


def test_the_reasoning_effort_is_sent_when_set_and_only_then() -> None:
    server = FakeOpenAI([MOVED, MOVED])
    with server as url:
        facts(configured(url, **{"llm.reasoning_effort": "high"}))
        facts(configured(url))
    sent, unset = server.requests
    assert sent["reasoning_effort"] == "high" and "reasoning_effort" not in unset
    assert sent["max_tokens"] == unset["max_tokens"] == 240


def test_a_tool_round_sends_the_effort_too() -> None:
    tool = Tool(name="look", description="look", parameters={"type": "object"})
    server = FakeOpenAI([json.dumps({"content": "done"})])
    with server as url:
        backend = OpenAICompatibleBackend(url, "m", reasoning_effort="low")
        rounds: list[ToolRound] = []

        async def run() -> None:
            async with backend:
                await backend.complete_tools(
                    PROMPT, [tool], rounds, allow_tools=True, max_tokens=64, temperature=0
                )

        asyncio.run(run())
    assert server.requests[0]["reasoning_effort"] == "low"


def test_reasoning_tokens_are_counted_apart_in_the_usage_and_the_store() -> None:
    server = FakeOpenAI([Reply(MOVED, reasoning_tokens=120)])
    store = SQLiteStore(":memory:")
    with server as url:
        settings = {"llm.kind": "openai", "llm.base_url": url, "llm.model": "m"}
        client = make_llm(Config.load(env={}, **settings), store)
        assert client is not None
        usage = MemoryUsageSink()
        assert facts(client.scoped(usage=usage)).facts[0] == "Maya moved to Lisbon."
    (rec,) = usage.records
    assert rec.reasoning_tokens == 120 and rec.completion_tokens == 120 + len(MOVED.split())
    assert store.llm_usage()["s"]["reasoning_tokens"] == 120
    assert usage.summary()["s"]["reasoning_tokens"] == 120


def test_a_reply_the_server_cut_is_asked_again_with_twice_the_room() -> None:
    half = MOVED[: len(MOVED) // 2]
    server = FakeOpenAI([Reply(half, finish_reason="length"), MOVED])
    with server as url:
        client = configured(url)
        assert client.budgets.profile == "chat"  # the default for an OpenAI-style server
        usage = MemoryUsageSink()
        assert len(facts(client.scoped(usage=usage)).facts) == 2
    assert [r["max_tokens"] for r in server.requests] == [240, 480]
    assert usage.records[0].attempts == 2 and usage.records[0].cut_off == 0


def test_the_configured_output_limit_stops_the_room_and_the_cut_reply_is_counted() -> None:
    cut = Reply('{"facts": ["Maya moved to Lisbon.", "Ben sta', finish_reason="length")
    server = FakeOpenAI([cut, cut])
    with server as url:
        client = configured(url, **{"llm.max_output_tokens": 400})
        usage = MemoryUsageSink()
        assert facts(client.scoped(usage=usage)).facts == ["Maya moved to Lisbon."]
    assert [r["max_tokens"] for r in server.requests] == [240, 400]
    assert usage.records[0].cut_off == 1 and usage.records[0].outcome == "repaired"


def test_the_effort_is_part_of_the_cache_key() -> None:
    plain = OpenAICompatibleBackend("http://127.0.0.1:9/v1", "m")
    high = OpenAICompatibleBackend("http://127.0.0.1:9/v1", "m", reasoning_effort="high")
    keys = {request_hash(b, PROMPT, None, 64, 0.0) for b in (plain, high)}
    assert len(keys) == 2


# OpenAI's answer to a reasoning model asked with the older name of the limit
REFUSED = (
    "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead."
)


def test_a_server_that_refuses_max_tokens_gets_max_completion_tokens_from_then_on() -> None:
    def script(request: dict[str, Any]) -> Reply | str:
        return Reply(REFUSED, status=400) if "max_tokens" in request else MOVED

    server = FakeOpenAI(script)
    with server as url:
        backend = OpenAICompatibleBackend(url, "m")

        async def run() -> list[Facts]:
            async with backend:
                client = LLMClient(backend)
                return [
                    await client.structured(PROMPT, Facts, stage="s", max_tokens=n)
                    for n in (240, 300)
                ]

        first, second = asyncio.run(run())
    assert first.facts == second.facts == ["Maya moved to Lisbon.", "Ben stayed in Porto."]
    refused, *sent = server.requests
    assert refused["max_tokens"] == 240 and "max_completion_tokens" not in refused
    assert [r.get("max_completion_tokens") for r in sent] == [240, 300]
    assert all("max_tokens" not in r for r in sent)  # asked once, then kept to


def test_another_bad_request_is_not_sent_again() -> None:
    server = FakeOpenAI([Reply("Unsupported parameter: 'temperature'.", status=400)])
    with server as url:
        client = LLMClient(OpenAICompatibleBackend(url, "m"))
        with pytest.raises(LLMError, match="temperature"):
            facts(client)
    assert len(server.requests) == 1
