"""An LLM server that is not there: a loopback port nothing listens on, and a transport
that counts the requests sent to it (one per attempt)."""

from __future__ import annotations

import socket

import httpx


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Counting(httpx.AsyncBaseTransport):
    """The real transport, counting the requests it is handed (one per attempt)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.requests = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        return await self.inner.handle_async_request(request)
