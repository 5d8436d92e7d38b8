"""OpenAICompatibleBackend against a real llama.cpp server (llama_cpp.server + SmolLM2)."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from memstrata.llm import LLMClient, MemoryUsageSink, Message, OpenAICompatibleBackend

pytestmark = pytest.mark.slow


class Names(BaseModel):
    names: list[Annotated[str, Field(max_length=24)]] = Field(max_length=4)


PROMPT = [
    Message(role="system", content="You reply with JSON only."),
    Message(role="user", content='List three fruit names as {"names": [...]}.'),
]


def test_structured_call_returns_valid_instance(
    server_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    backend = OpenAICompatibleBackend(base_url=server_url, model="smollm2")
    usage = MemoryUsageSink()
    client = LLMClient(backend, usage=usage)

    async def run() -> Names:
        try:
            return await client.structured(PROMPT, Names, stage="extract", max_tokens=96)
        finally:
            await backend.aclose()

    with caplog.at_level(logging.INFO, logger="memstrata.llm"):
        result = asyncio.run(run())
    assert isinstance(result, Names) and len(result.names) <= 4
    (rec,) = usage.records
    assert rec.ok and rec.backend == "openai" and rec.attempts >= 1
    assert rec.prompt_tokens > 0 and rec.completion_tokens > 0
    # llama-cpp-python's server only knows {"type": "json_object", "schema": ...}
    assert any("using json_object" in r.getMessage() for r in caplog.records)


def test_text_call_reports_usage(server_url: str) -> None:
    backend = OpenAICompatibleBackend(base_url=server_url, model="smollm2")
    usage = MemoryUsageSink()

    async def run() -> str:
        async with backend:
            return await LLMClient(backend, usage=usage).text(PROMPT, stage="chat", max_tokens=16)

    assert isinstance(asyncio.run(run()), str)
    (rec,) = usage.records
    assert rec.ok and rec.prompt_tokens > 0 and rec.completion_tokens > 0


def test_explicit_json_object_format_needs_no_fallback(server_url: str) -> None:
    backend = OpenAICompatibleBackend(server_url, "smollm2", structured_format="json_object")
    usage = MemoryUsageSink()
    result = asyncio.run(
        LLMClient(backend, usage=usage).structured(PROMPT, Names, stage="s", max_tokens=96)
    )
    assert isinstance(result, Names)
    assert usage.records[0].completion_tokens > 0
