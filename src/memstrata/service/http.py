"""The service's HTTP plumbing: JSON errors with their status, and the middleware that
guards every request before the app sees it (:class:`Guard`: host names, keys, requests
in flight, how long a body may take, security headers; :class:`BodyLimit`: body size).

The order matters. A request is authenticated from its headers alone, before any of its
body is read, so a caller without a valid key is answered 401 at once and holds nothing;
only then does it take a slot, and a body that does not arrive in time is answered 408
and its connection closed. Callers without a key (routes that need none) never take the
last share of the slots, which stays with keyed callers.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memstrata.errors import (
    ConfigError,
    ConflictError,
    InvalidInputError,
    MemstrataError,
    Misdirected,
    NamespaceNotFoundError,
    NotFound,
    Overloaded,
    RequestTimeout,
    StoreError,
    StoreLockedError,
)
from memstrata.llm.types import LLMBackendError, LLMError
from memstrata.redact import redact
from memstrata.service import keys

if TYPE_CHECKING:
    from memstrata.memory import AsyncMemory
    from memstrata.store.base import ApiKey

logger = logging.getLogger("memstrata.service")

#: what the explorer's pages may load and run: their own files only, no inline script
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
#: the interactive API docs (/docs, /redoc) load their viewer from its CDN, inline
DOCS_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
    "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net https://fonts.googleapis.com; "
    "font-src 'self' https://fonts.gstatic.com; img-src 'self' data: https:; "
    "worker-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
#: the request's key, once the guard has checked it (None: the store is open)
KEY = "memstrata.key"
#: the attribute a route dependency carries to say what scope the route needs
SCOPE_ATTR = "memstrata_scope"


# errors ------------------------------------------------------------------------------------
_STATUS: list[tuple[type[Exception], int, str]] = [
    (ConflictError, 409, "conflict"),
    (NamespaceNotFoundError, 404, "namespace_not_found"),
    (NotFound, 404, "not_found"),
    (keys.Unauthorized, 401, "unauthorized"),
    (keys.Forbidden, 403, "forbidden"),
    (Misdirected, 421, "misdirected_request"),
    (RequestTimeout, 408, "request_timeout"),
    (Overloaded, 429, "too_many_requests"),
    (InvalidInputError, 400, "invalid_input"),
    (ConfigError, 400, "invalid_config"),
    (StoreLockedError, 503, "store_busy"),
    (StoreError, 503, "store_unavailable"),
    (LLMError, 502, "llm_bad_reply"),
    (MemstrataError, 500, "error"),
]


def describe(exc: MemstrataError) -> tuple[int, str, str]:
    """The HTTP status, code and (redacted) message of an error: what REST answers and
    what an MCP tool error says. A model server that cannot be reached (or says it is
    overloaded) is 503 ``llm_unavailable``; one that answered with an error or with
    output that cannot be used, 502 ``llm_bad_reply``."""
    if isinstance(exc, LLMBackendError) and (
        exc.unreachable or (exc.status is None and exc.retryable) or exc.status in (429, 503)
    ):
        return 503, "llm_unavailable", redact(str(exc))
    for kind, status, code in _STATUS:
        if isinstance(exc, kind):
            return status, code, redact(str(exc))
    raise AssertionError("unreachable")  # MemstrataError is the last row


def error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    response = JSONResponse({"error": {"code": code, "message": redact(message), **extra}}, status)
    if status == 401:
        response.headers["WWW-Authenticate"] = "Bearer"
    elif status == 429:
        response.headers["Retry-After"] = "1"
    return response


def _allowed(app: FastAPI, scope: Scope) -> list[str]:
    """The methods of the resource the path names, read most literally. A namespace or an
    episode id may hold "/", so ``/v1/namespaces/a/ask`` also reads as the namespace
    ``a/ask`` (whose DELETE exists): of the routes that match the path, those whose path
    parameters take in the fewest "/" are the resource the path names (the router
    itself names only the first)."""
    found: list[tuple[int, set[str]]] = []
    for route in app.router.routes:
        match, child = route.matches({**scope, "method": "\0"})
        if match is not Match.NONE:
            params = child.get("path_params", {})
            depth = sum(str(v).count("/") for v in params.values())
            found.append((depth, set(getattr(route, "methods", None) or ())))
    least = min((depth for depth, _ in found), default=0)
    return sorted({m for depth, methods in found if depth == least for m in methods})


def install_errors(app: FastAPI) -> None:
    @app.exception_handler(MemstrataError)
    async def memstrata_error(_: Request, exc: MemstrataError) -> JSONResponse:
        status, code, message = describe(exc)
        extra = {"ids": exc.ids} if isinstance(exc, ConflictError) else {}
        return error(status, code, message, **extra)

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
    async def http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:  # FastAPI could not decode the body (not UTF-8 JSON)
            return error(400, "malformed_json", f"the body is not valid UTF-8 JSON: {exc.detail}")
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        response = error(exc.status_code, code, str(exc.detail))
        if exc.status_code == 405:
            response.headers["Allow"] = ", ".join(_allowed(app, request.scope))
        return response

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        logger.error("unexpected error: %s", redact("".join(traceback.format_exception(exc))))
        return error(500, "internal", f"{type(exc).__name__}: the server failed; see its log")


# what a route needs --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Need:
    """What a request must bring: a key of ``scope`` (None: none), reaching ``namespace``
    (None: any)."""

    scope: str | None = None
    namespace: str | None = None


def route_scope(route: APIRoute) -> str | None:
    """The scope a route's dependencies declare (:data:`SCOPE_ATTR`); None: no key."""
    for dependency in route.dependencies:
        wanted = getattr(dependency.dependency, SCOPE_ATTR, None)
        if wanted is not None:
            return str(wanted)
    return None


class Segment(Convertor[str]):
    """A name in a ``/v1`` path (a namespace, an episode id, a structure's name) is one
    segment, a "/" or "%" in it sent as %2F or %25. :func:`segment_path` leaves those
    escaped in the path the router reads (and what is not ASCII); this reads them back. So
    ``.../episodes/a%2Fhistory`` is the episode ``a/history``, never the history of
    ``a``, and a name can neither move the namespace nor name another route."""

    regex = "[^/]+"

    def convert(self, value: str) -> str:
        return unquote(value)

    def to_string(self, value: str) -> str:
        return quote(value, safe="")


register_url_convertor("segment", Segment())


def segment_path(scope: Scope) -> None:
    """Set a ``/v1`` request's path from the path as the client sent it: each segment
    decoded, then written again with only "/", "%" and what is not printable ASCII
    escaped, which :class:`Segment` reads back (other paths are left as they are)."""
    raw = scope.get("raw_path")
    if not raw or not scope["path"].startswith("/v1/"):
        return
    segments = [unquote(part, errors="replace") for part in raw.decode("latin-1").split("/")]
    scope["path"] = "/".join(quote(part, safe=_KEEP) for part in segments)


#: what :func:`segment_path` writes as it is: printable ASCII but "/" and "%"
_KEEP = "".join(chr(c) for c in range(32, 127) if chr(c) not in "/%")


def route_needs(app: FastAPI, mounts: dict[str, str]) -> Callable[[Scope], Need]:
    """Reads a request's needs off the route it will reach, as the router picks it (the
    first full match): the scope its dependencies declare (:data:`SCOPE_ATTR`) and its
    ``namespace`` path parameter; ``mounts`` gives the scope of a mounted app by path.
    A request that reaches no route needs nothing (it gets 404 or 405)."""

    def need(scope: Scope) -> Need:
        for route in app.router.routes:
            match, child = route.matches(scope)
            if match is not Match.FULL:
                continue
            if isinstance(route, Mount):
                return Need(mounts.get(route.path))
            wanted = route_scope(route) if isinstance(route, APIRoute) else None
            if wanted is None:
                return Need()
            return Need(wanted, child.get("path_params", {}).get("namespace"))
        return Need()

    return need


# the guard -------------------------------------------------------------------------------
class Guard:
    """Every request, before the app: the security headers on the way out; an open
    server's host check (DNS rebinding); the key the route needs, from the headers; a
    slot (``limit`` in all, the last quarter kept for keyed callers); a deadline for the
    body (``body_timeout_s``). ``/v1/health`` passes with its headers only."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        memory: Callable[[], AsyncMemory],
        needs: Callable[[Scope], Need],
        host: str,
        limit: int,
        body_timeout_s: float,
    ) -> None:
        self.app = app
        self.memory = memory
        self.needs = needs
        self.host = host.strip("[]").lower()
        self.loopback = keys.loopback(host)
        self.limit = limit
        self.unkeyed_limit = limit - limit // 4
        self.body_timeout_s = body_timeout_s
        self.keyed = 0
        self.unkeyed = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        segment_path(scope)  # before the router reads it
        send = _with_headers(send, scope["path"])
        if scope["path"] == "/v1/health":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        pending = _has_body(headers)
        try:
            key, open_ = await self._admit(scope, headers)
        except MemstrataError as exc:
            await _refuse(exc, pending, scope, receive, send)
            return
        scope[KEY] = key
        keyed = key is not None or open_
        if self.keyed + self.unkeyed >= self.limit or (
            not keyed and self.unkeyed >= self.unkeyed_limit
        ):
            busy = Overloaded(f"{self.limit} requests are in flight; retry shortly")
            await _refuse(busy, pending, scope, receive, send)
            return
        if keyed:
            self.keyed += 1
        else:
            self.unkeyed += 1
        try:
            if pending:
                await _Deadline(self.app, self.body_timeout_s)(scope, receive, send)
            else:
                await self.app(scope, receive, send)
        finally:
            if keyed:
                self.keyed -= 1
            else:
                self.unkeyed -= 1

    async def _admit(self, scope: Scope, headers: dict[str, str]) -> tuple[ApiKey | None, bool]:
        """The request's key and whether the store is open; an error if it may not pass."""
        known = self.memory().keys
        need = self.needs(scope)
        if need.scope is None:
            key, open_ = None, await known.is_open()
        else:
            text = keys.carried(headers)
            key = await known.check(text, need.scope, bound_to_loopback=self.loopback)
            open_ = key is None
        if open_ and not self._own_host(headers, scope):
            raise Misdirected(
                "this server answers without a key only under its own address (the Host "
                "or Origin names another one)"
            )
        if key is not None and need.namespace is not None and not key.reaches(need.namespace):
            raise NamespaceNotFoundError(need.namespace)  # as if it did not exist
        return key, open_

    def _own_host(self, headers: dict[str, str], scope: Scope) -> bool:
        """Whether the Host (and the Origin, when sent) name this server: a loopback name
        or its bind address, and its port when they give one. A page served from another
        name that resolves here (DNS rebinding) is refused."""
        server = scope.get("server")
        port = server[1] if server else None
        for value, kind in ((headers.get("host"), "host"), (headers.get("origin"), "origin")):
            if value is None:
                continue
            if kind == "origin":
                if value == "null":
                    return False
                parts = urlsplit(value)
                name, given = parts.hostname or "", parts.port
                given = given or {"http": 80, "https": 443}.get(parts.scheme)
            else:
                parts = urlsplit("//" + value)
                name, given = parts.hostname or "", parts.port
            if not (keys.loopback(name) or name == self.host):
                return False
            if given is not None and port is not None and given != port:
                return False
        return True


class _Deadline:
    """Runs the app with a deadline on its request body: when the body has not arrived by
    then, the client gets 408 and its connection is closed, and the app sees the client
    gone (what it sends after that is dropped)."""

    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        state = {"read": False, "started": False, "answered": False}

        async def timed() -> Message:
            if state["answered"]:
                return {"type": "http.disconnect"}
            if state["read"]:
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                if not state["started"]:
                    state["answered"] = True
                    late = RequestTimeout(
                        f"the request body did not arrive within {self.timeout_s:g} s"
                    )
                    await _refuse(late, True, scope, receive, send)
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body"):
                state["read"] = True
            return message

        async def sending(message: Message) -> None:
            if state["answered"]:
                return
            state["started"] = True
            await send(message)

        try:
            await self.app(scope, timed, sending)
        except Exception:
            if not state["answered"]:
                raise  # the app failed on its own; after a 408 it only saw the client go


async def _refuse(
    exc: MemstrataError, pending: bool, scope: Scope, receive: Receive, send: Send
) -> None:
    """Answer ``exc`` without reading the body; a body left unread closes the connection,
    so the client cannot hold it by sending the rest slowly."""
    status, code, message = describe(exc)
    response = error(status, code, message)
    if pending:
        response.headers["Connection"] = "close"
    await response(scope, receive, send)


def _has_body(headers: dict[str, str]) -> bool:
    length = headers.get("content-length", "")
    return (length.isdigit() and int(length) > 0) or "chunked" in headers.get(
        "transfer-encoding", ""
    ).lower()


def _with_headers(send: Send, path: str) -> Send:
    """``send`` adding ``X-Content-Type-Options: nosniff`` to every response and a
    Content-Security-Policy (framing refused) to every HTML page that has none."""
    policy = DOCS_POLICY if path in ("/docs", "/redoc", "/docs/oauth2-redirect") else PAGE_POLICY

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            names = {k.lower() for k, _ in headers}
            headers.append((b"x-content-type-options", b"nosniff"))
            kind = next((v for k, v in headers if k.lower() == b"content-type"), b"")
            if kind.startswith(b"text/html") and b"content-security-policy" not in names:
                headers.append((b"content-security-policy", policy.encode()))
            message = {**message, "headers": headers}
        await send(message)

    return sending


class BodyLimit:
    """Refuses a body over ``limit`` bytes with 413 before the app reads any of it: by its
    Content-Length, or, for a body streamed without one, by reading it up to the limit
    first (the app then reads the held copy). A refused body's connection is closed."""

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
                await self._too_large(scope, receive, send)
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
                await self._too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return held.pop(0) if held else await receive()

        await self.app(scope, replay, send)

    def _too_large(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        response = error(413, "too_large", f"the request body is over {self.limit} bytes")
        response.headers["Connection"] = "close"
        return response(scope, receive, send)


__all__ = [
    "DOCS_POLICY",
    "KEY",
    "PAGE_POLICY",
    "SCOPE_ATTR",
    "BodyLimit",
    "Guard",
    "Need",
    "NotFound",
    "describe",
    "Segment",
    "error",
    "install_errors",
    "route_needs",
    "route_scope",
]
