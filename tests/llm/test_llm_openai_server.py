"""OpenAICompatibleBackend against a real llama.cpp server (llama_cpp.server + SmolLM2)."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import httpx
import pytest
from pydantic import BaseModel, Field

from memstrata.llm import LLMClient, MemoryUsageSink, Message, OpenAICompatibleBackend

pytestmark = pytest.mark.slow

STARTUP_TIMEOUT_S = 90.0


class Names(BaseModel):
    names: list[Annotated[str, Field(max_length=24)]] = Field(max_length=4)


PROMPT = [
    Message(role="system", content="You reply with JSON only."),
    Message(role="user", content='List three fruit names as {"names": [...]}.'),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server_url(smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(smollm2_gguf),
        "--model_alias", "smollm2",
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", "2048",
        "--n_threads", "1",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited early:\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/models", timeout=2.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server not ready:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.25)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
