"""The client's breaker over a real closed loopback port, through the OpenAI-compatible
HTTP backend: a call keeps its configured retries, three calls in a row that cannot
reach the server stop the sending, a cool-down (on an injected clock) lets one call out
again, and any answer resets the count. Requests are counted on the wire; backoff waits
go to an injected sleep, so nothing here sleeps."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import BaseModel

from memstrata.llm import (
    LLMBackendError,
    LLMClient,
    LLMUnavailableError,
    MemoryUsageSink,
    Message,
    OpenAICompatibleBackend,
)
from memstrata.llm.types import NOT_SENT
from unreachable import Counting, closed_port

PROMPT = [Message(role="user", content="hi")]


class Names(BaseModel):
    names: list[str]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make_client(
    port: int, wire: Counting, clock: Clock, waits: list[float], usage: MemoryUsageSink
) -> LLMClient:
    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    backend = OpenAICompatibleBackend(f"http://127.0.0.1:{port}/v1", "m", transport=wire)
    return LLMClient(backend, usage=usage, clock=clock, sleep=sleep)


def test_three_calls_that_cannot_connect_stop_the_sending_until_the_cool_down() -> None:
    wire, clock, waits, usage = Counting(), Clock(), [], MemoryUsageSink()
    client = make_client(closed_port(), wire, clock, waits, usage)

    async def run() -> None:
        for calls in (1, 2, 3):  # each keeps llm.max_retries (2): three attempts
            with pytest.raises(LLMBackendError) as failed:
                await client.text(PROMPT, stage="s")
            assert failed.value.unreachable and not isinstance(failed.value, LLMUnavailableError)
            assert "cannot reach" in str(failed.value)
            assert wire.requests == 3 * calls
        assert waits == [0.5, 1.0] * 3  # the backoff, waited on the injected sleep
        assert client.breaker.is_open

        for scoped in (client, client.scoped(namespace="other")):  # one server, one breaker
            with pytest.raises(LLMUnavailableError) as refused:
                await scoped.structured(PROMPT, Names, stage="s")
            assert NOT_SENT in str(refused.value) and "3 calls in a row" in str(refused.value)
        assert wire.requests == 9 and len(waits) == 6  # nothing sent, nothing waited

        clock.now += 29.9
        with pytest.raises(LLMUnavailableError):
            await client.text(PROMPT, stage="s")
        clock.now += 0.1  # the cool-down is over: the next call goes out (with retries)
        with pytest.raises(LLMBackendError) as again:
            await client.text(PROMPT, stage="s")
        assert not isinstance(again.value, LLMUnavailableError) and wire.requests == 12
        with pytest.raises(LLMUnavailableError):  # one failure more opened it again
            await client.text(PROMPT, stage="s")
        assert wire.requests == 12

    asyncio.run(run())
    # the calls sent are accounted, the refused ones are not (no request, no cost)
    assert [r.ok for r in usage.records] == [False] * 4
    assert [r.attempts for r in usage.records] == [3, 3, 3, 3]


class _Answer(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({"choices": [{"message": {"content": "ok"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


Later = tuple[int, threading.Event, threading.Event]


@pytest.fixture
def server_later() -> Iterator[Later]:
    """A port with no server yet; setting ``up`` starts one on it, ``down`` stops it."""
    port = closed_port()
    up, down, ready = threading.Event(), threading.Event(), threading.Event()

    def serve() -> None:
        up.wait()
        server = ThreadingHTTPServer(("127.0.0.1", port), _Answer)
        ready.set()
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        down.wait()
        server.shutdown()
        server.server_close()
        ready.clear()

    runner = threading.Thread(target=serve, daemon=True)
    runner.start()
    yield port, up, ready
    up.set()
    down.set()
    runner.join()


def test_an_answer_resets_the_count(
    server_later: tuple[int, threading.Event, threading.Event],
) -> None:
    port, up, ready = server_later
    wire, clock, waits, usage = Counting(), Clock(), [], MemoryUsageSink()
    client = make_client(port, wire, clock, waits, usage)

    async def run() -> None:
        for _ in range(2):
            with pytest.raises(LLMBackendError):
                await client.text(PROMPT, stage="s")
        assert client.breaker.failures == 2 and not client.breaker.is_open
        up.set()
        await asyncio.to_thread(ready.wait)
        assert await client.text(PROMPT, stage="s") == "ok"  # the server came back
        assert client.breaker.failures == 0 and wire.requests == 7

    asyncio.run(run())
