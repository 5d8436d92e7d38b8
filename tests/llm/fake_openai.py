"""A real HTTP server on a loopback port that speaks OpenAI's ``/v1/chat/completions``.

Tests of the HTTP backend need the failures a real server produces (429 with
``Retry-After``, 5xx, a connection dropped mid-reply, a reply slower than the client's
timeout) over a real socket, so httpx's own error mapping is what gets tested::

    server = FakeOpenAI(['{"names": ["a"]}', Reply(status=429, retry_after=0)])
    with server as base_url:
        backend = OpenAICompatibleBackend(base_url, "fake")
        ...
    assert len(server.requests) == 2
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer. ``content`` is the assistant message; ``status`` >= 400
    answers an error body instead. ``drop`` closes the socket without a byte of reply,
    ``partial`` after the headers and half the body; ``delay_s`` waits before answering.
    ``reasoning_tokens`` are reported as a reasoning model's are (and counted in the
    completion tokens, as OpenAI counts them)."""

    content: str = ""
    status: int = 200
    retry_after: float | str | None = None
    delay_s: float = 0.0
    drop: bool = False
    partial: bool = False
    finish_reason: str = "stop"
    reasoning_tokens: int | None = None


Step = str | Reply
Script = Sequence[Step] | Callable[[dict[str, Any]], Step]

#: the status of a request beyond the script: a client error, so nothing retries it
EXHAUSTED = 418


class FakeOpenAI:
    """Serves ``script`` in order (a ``str`` is a normal reply's content), or calls it
    with each request's JSON payload. ``requests`` keeps every payload received."""

    def __init__(self, script: Script, *, model: str = "fake-model") -> None:
        self.script = script
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the server is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def next_step(self, payload: dict[str, Any]) -> Step:
        with self._lock:
            self.requests.append(payload)
            n = len(self.requests) - 1
        if callable(self.script):
            return self.script(payload)
        if n >= len(self.script):
            return Reply(status=EXHAUSTED, content=f"script exhausted at request {n + 1}")
        return self.script[n]

    def __enter__(self) -> str:
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._stop.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # a short poll interval: shutdown() waits for the next poll
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self.base_url

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()  # wakes delayed replies
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def completion_body(self, reply: Reply) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": self.usage(reply),
        }

    def usage(self, reply: Reply) -> dict[str, Any]:
        written = len(reply.content.split()) + (reply.reasoning_tokens or 0)
        usage: dict[str, Any] = {
            "prompt_tokens": 7,
            "completion_tokens": written,
            "total_tokens": 7 + written,
        }
        if reply.reasoning_tokens is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
        return usage


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do: the pool gets used
    server_fake: FakeOpenAI

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        fake = self.server_fake
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        step = fake.next_step(json.loads(raw or b"{}"))
        reply = Reply(content=step) if isinstance(step, str) else step
        if reply.delay_s and fake._stop.wait(reply.delay_s):
            return  # shutting down
        if reply.drop:
            self._hang_up()
            return
        if reply.status >= 400:
            body: dict[str, Any] = {"error": {"message": reply.content or "fake error"}}
            headers = {}
            if reply.retry_after is not None:
                headers["Retry-After"] = str(reply.retry_after)
            self._send(reply.status, body, headers)
            return
        self._send(200, fake.completion_body(reply), partial=reply.partial)

    def _send(
        self,
        status: int,
        body: dict[str, Any],
        headers: dict[str, str] | None = None,
        *,
        partial: bool = False,
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if partial:
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self._hang_up()
            return
        self.wfile.write(data)

    def _hang_up(self) -> None:
        """Close the connection the way a crashing server does: no (more) bytes."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass
