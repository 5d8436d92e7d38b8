"""OpenAICompatibleBackend failure paths over real sockets: refused connections and a
real HTTP server that answers with errors."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import BaseModel

from memstrata.llm import (
    LLMBackendError,
    LLMClient,
    MemoryUsageSink,
    Message,
    OpenAICompatibleBackend,
)

SECRET = "sk-test-5ecret-never-print"
PROMPT = [Message(role="user", content="hi")]


class Names(BaseModel):
    names: list[str]


class _ErrorHandler(BaseHTTPRequestHandler):
    """Answers every POST with the status in the path and echoes the request headers,
    the worst case for leaking the API key into error messages."""

    hits: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        self.hits.append(self.path)
        length = int(self.headers.get("Content-Length", 0))
        self.rfile.read(length)
        status = int(self.path.strip("/").split("/")[0])
        body = json.dumps({"error": "boom", "headers": dict(self.headers)}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="module")
def error_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ErrorHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_is_a_counted_backend_error() -> None:
    backend = OpenAICompatibleBackend(
        f"http://127.0.0.1:{_closed_port()}/v1", "m", api_key=SECRET, timeout=5.0
    )
    usage = MemoryUsageSink()
    client = LLMClient(backend, usage=usage, max_retries=1, backoff=0.01)
    with pytest.raises(LLMBackendError, match="cannot reach") as info:
        asyncio.run(client.structured(PROMPT, Names, stage="extract"))
    assert info.value.retryable and info.value.status is None
    assert SECRET not in str(info.value)
    (rec,) = usage.records
    assert not rec.ok and rec.attempts == 2 and rec.stage == "extract"
    assert rec.error is not None and SECRET not in rec.error


def test_http_500_is_retried_then_raised_without_the_key(error_server: str) -> None:
    _ErrorHandler.hits.clear()
    backend = OpenAICompatibleBackend(f"{error_server}/500/v1", "m", api_key=SECRET)
    usage = MemoryUsageSink()
    client = LLMClient(backend, usage=usage, max_retries=2, backoff=0.01)
    with pytest.raises(LLMBackendError, match="HTTP 500") as info:
        asyncio.run(client.text(PROMPT, stage="summarize"))
    assert info.value.status == 500 and info.value.retryable
    assert "boom" in str(info.value)  # body excerpt
    assert SECRET not in str(info.value) and "***" in str(info.value)
    assert SECRET not in repr(backend)
    assert _ErrorHandler.hits == ["/500/v1/chat/completions"] * 3
    (rec,) = usage.records
    assert not rec.ok and rec.attempts == 3 and rec.error is not None
    assert SECRET not in rec.error


def test_http_401_is_not_retried(error_server: str) -> None:
    _ErrorHandler.hits.clear()
    backend = OpenAICompatibleBackend(f"{error_server}/401/v1", "m", api_key=SECRET)
    usage = MemoryUsageSink()
    with pytest.raises(LLMBackendError, match="HTTP 401") as info:
        asyncio.run(LLMClient(backend, usage=usage).structured(PROMPT, Names, stage="s"))
    assert not info.value.retryable
    assert len(_ErrorHandler.hits) == 1
    assert usage.records[0].attempts == 1
