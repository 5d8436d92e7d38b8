"""The service's HTTP plumbing: JSON errors with their status, and the middleware that
guards every request (body size, requests in flight, keys on the MCP transport)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memstrata.errors import (
    ConfigError,
    ConflictError,
    InvalidInputError,
    MemstrataError,
    NamespaceNotFoundError,
    NotFound,
    StoreError,
    StoreLockedError,
)
from memstrata.service import keys

if TYPE_CHECKING:
    from memstrata.memory import AsyncMemory

logger = logging.getLogger("memstrata.service")


# errors ------------------------------------------------------------------------------------
_STATUS: list[tuple[type[Exception], int, str]] = [
    (ConflictError, 409, "conflict"),
    (NamespaceNotFoundError, 404, "namespace_not_found"),
    (NotFound, 404, "not_found"),
    (keys.Unauthorized, 401, "unauthorized"),
    (keys.Forbidden, 403, "forbidden"),
    (InvalidInputError, 400, "invalid_input"),
    (ConfigError, 400, "invalid_config"),
    (StoreLockedError, 503, "store_busy"),
    (StoreError, 503, "store_unavailable"),
    (MemstrataError, 500, "error"),
]


def error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status)


def install_errors(app: FastAPI) -> None:
    @app.exception_handler(MemstrataError)
    async def memstrata_error(_: Request, exc: MemstrataError) -> JSONResponse:
        for kind, status, code in _STATUS:
            if isinstance(exc, kind):
                extra = {"ids": exc.ids} if isinstance(exc, ConflictError) else {}
                response = error(status, code, str(exc), **extra)
                if status == 401:
                    response.headers["WWW-Authenticate"] = "Bearer"
                return response
        raise AssertionError("unreachable")  # MemstrataError is the last row

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {"at": ".".join(str(p) for p in e["loc"]), "problem": e["msg"]} for e in exc.errors()
        ]
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            return error(400, "malformed_json", "the body is not valid JSON", problems=problems)
        return error(
            422, "invalid_request", "the request does not match its schema", problems=problems
        )

    @app.exception_handler(StarletteHTTPException)
    async def http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:  # FastAPI could not decode the body (not UTF-8 JSON)
            return error(400, "malformed_json", f"the body is not valid UTF-8 JSON: {exc.detail}")
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error(exc.status_code, code, str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected error")
        return error(500, "internal", f"{type(exc).__name__}: the server failed; see its log")


class BodyLimit:
    """Refuses a body over ``limit`` bytes with 413 before the app reads any of it: by its
    Content-Length, or, for a body streamed without one, by reading it up to the limit
    first (the app then reads the held copy)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None and length.isdigit():
            if int(length) > self.limit:
                await _too_large(self.limit)(scope, receive, send)
            else:  # the server delivers no more than the declared length
                await self.app(scope, receive, send)
            return
        if b"chunked" not in headers.get(b"transfer-encoding", b"").lower():
            await self.app(scope, receive, send)  # no body
            return
        held: list[Message] = []
        seen = 0
        while True:
            message = await receive()
            held.append(message)
            if message["type"] != "http.request":
                break  # the client left
            seen += len(message.get("body", b""))
            if seen > self.limit:
                await _too_large(self.limit)(scope, receive, send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return held.pop(0) if held else await receive()

        await self.app(scope, replay, send)


class Inflight:
    """Answers 429 (with Retry-After) once ``limit`` requests are being handled, so an
    overloaded server says so at once instead of letting requests queue unseen; health
    checks always pass."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit
        self.now = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") == "/v1/health":
            await self.app(scope, receive, send)
            return
        if self.now >= self.limit:
            response = error(
                429, "too_many_requests", f"{self.limit} requests are in flight; retry shortly"
            )
            response.headers["Retry-After"] = "1"
            await response(scope, receive, send)
            return
        self.now += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.now -= 1


class McpKeys:
    """Lets a request reach the MCP transport only with a valid key (while keys are in
    use), answering 401 in the service's JSON otherwise."""

    def __init__(self, app: ASGIApp, memory: Callable[[], AsyncMemory]) -> None:
        self.app = app
        self.memory = memory

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            try:
                await keys.check(self.memory().store, headers, "read")
            except keys.Unauthorized as exc:
                response = error(401, "unauthorized", str(exc))
                response.headers["WWW-Authenticate"] = "Bearer"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _too_large(limit: int) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    return error(413, "too_large", f"the request body is over {limit} bytes")


__all__ = ["BodyLimit", "Inflight", "McpKeys", "NotFound", "error", "install_errors"]
