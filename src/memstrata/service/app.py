"""The REST service: the verbs of :class:`~memstrata.memory.AsyncMemory` under ``/v1``.

One memory (one store) per app, opened in the app's lifespan on the server's own event
loop, with the build worker running beside the requests (``build.mode = "queue"``): an
add commits its episodes and returns at once (they are searchable by the store's own
routes from then on), and the structures follow in the background. Errors are JSON
``{"error": {"code", "message"}}`` with the status that says what went wrong, never a
stack trace; request bodies are limited in size before they are read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memstrata.config import Config
from memstrata.errors import (
    ConfigError,
    ConflictError,
    InvalidInputError,
    MemstrataError,
    NamespaceNotFoundError,
    StoreError,
    StoreLockedError,
)
from memstrata.memory import AsyncMemory
from memstrata.models import EpisodeIn
from memstrata.service import keys
from memstrata.store import SearchFilters
from memstrata.store.base import ApiKey

logger = logging.getLogger("memstrata.service")

Ids = Annotated[list[str], Query(min_length=1, description="ids to delete")]

#: the largest request body read, in bytes (a batch of a few thousand turns)
MAX_BODY = 10 * 1024 * 1024


class EpisodeBody(EpisodeIn):
    """One episode to remember; ``id`` makes the add idempotent. An unknown field is an
    error, not dropped."""

    model_config = ConfigDict(extra="forbid")


class AddBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    episodes: list[EpisodeBody] = Field(min_length=1, max_length=10_000)
    replace: bool = Field(
        default=False, description="replace ids stored with other content (kept in history)"
    )


class UpdateBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str


class _Reading(BaseModel):
    """What a search and an ask share: how many hits, with which recipe, filtered how."""

    model_config = ConfigDict(extra="forbid")

    k: int | None = Field(default=None, ge=1, le=200)
    recipe: str | None = None
    filters: SearchFilters | None = None


class SearchBody(_Reading):
    query: str


class AskBody(_Reading):
    question: str


class KeyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespaces: list[str] = Field(min_length=1, description='namespaces it reaches; "*": all')
    scope: Literal["read", "write", "admin"] = "read"
    label: str | None = None


class BuildBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recipe: str | None = None
    tier: str | None = None


def create_app(config: Config, *, max_body: int = MAX_BODY, workers: int = 1) -> FastAPI:
    """The app over the store ``config.store`` names, with a build worker in its process
    (``workers=0``: none, for a store whose ``memstrata worker`` processes run apart)."""
    state: dict[str, AsyncMemory] = {}

    from memstrata.service.mcp import build_server

    agent = build_server(memory=lambda: state["memory"])
    mcp_app = agent.streamable_http_app(streamable_http_path="/")

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        memory = await AsyncMemory.open(config=config)
        state["memory"] = memory
        tasks = [memory.start_worker()] if workers else []
        try:
            async with agent.session_manager.run():
                yield
        finally:
            await memory.close()  # stops the worker after its current batch
            for task in tasks:
                with contextlib.suppress(BaseException):
                    await task

    app = FastAPI(
        title="memstrata",
        version="1",
        description="Long-term memory for LLM agents: episodes in, cited context out.",
        lifespan=lifespan,
    )
    app.add_middleware(_BodyLimit, limit=max_body)
    _errors(app)
    # MCP over streamable HTTP, with the same keys: any valid key may connect, and each
    # tool checks what it reaches (the MCP SDK's transport answers below /mcp/).
    app.mount("/mcp", _McpKeys(mcp_app, lambda: state["memory"]))

    def mem() -> AsyncMemory:
        return state["memory"]

    async def caller(request: Request, scope: str) -> ApiKey | None:
        """The request's key (None while no key is live); 401 or 403 as it deserves."""
        return await keys.check(mem().store, request.headers, scope)

    def scoped(scope: str) -> Any:
        async def check(request: Request) -> ApiKey | None:
            key = await caller(request, scope)
            namespace = request.path_params.get("namespace")
            if key is not None and namespace is not None and not key.reaches(namespace):
                raise NamespaceNotFoundError(namespace)  # as if it did not exist
            return key

        return Depends(check)

    read, write = scoped("read"), scoped("write")

    @app.get("/v1/health", tags=["service"])
    async def health() -> dict[str, str]:
        """The process answers."""
        return {"status": "ok"}

    @app.get("/v1/ready", tags=["service"])
    async def ready() -> dict[str, Any]:
        """The store answers (503 while it cannot)."""
        names = await mem().namespaces()
        return {"status": "ready", "namespaces": len(names)}

    @app.get("/v1/namespaces", tags=["namespaces"])
    async def namespaces(request: Request) -> dict[str, list[str]]:
        """The namespaces in the store that the caller's key reaches."""
        key = await caller(request, "read")
        names = await mem().namespaces()
        return {"namespaces": [n for n in names if key is None or key.reaches(n)]}

    @app.get("/v1/recipes", tags=["namespaces"], dependencies=[read])
    async def recipes() -> dict[str, Any]:
        return {"recipes": mem().recipes()}

    @app.post("/v1/namespaces/{namespace}/episodes", tags=["episodes"], dependencies=[write])
    async def add(namespace: str, body: AddBody) -> dict[str, Any]:
        """Remember episodes. Ids already stored with the same content are ``existing``
        (a retried request changes nothing); with other content ``conflicts``, left as
        they were unless ``replace``."""
        items = [e.model_dump(exclude_none=True) for e in body.episodes]
        report = await mem().add_many(items, namespace=namespace, replace=body.replace)
        return report.model_dump()

    @app.get("/v1/namespaces/{namespace}/episodes/{id}", tags=["episodes"], dependencies=[read])
    async def get(namespace: str, id: str) -> dict[str, Any]:
        return (await _episode(mem(), namespace, id)).model_dump(mode="json")

    @app.put("/v1/namespaces/{namespace}/episodes/{id}", tags=["episodes"], dependencies=[write])
    async def update(namespace: str, id: str, body: UpdateBody) -> dict[str, Any]:
        """Replace an episode's text; the old version stays in its history."""
        await _episode(mem(), namespace, id)
        episode = await mem().update(id, body.text, namespace=namespace)
        return episode.model_dump(mode="json")

    @app.get(
        "/v1/namespaces/{namespace}/episodes/{id}/history", tags=["episodes"], dependencies=[read]
    )
    async def history(namespace: str, id: str) -> dict[str, Any]:
        await _episode(mem(), namespace, id)
        versions = await mem().history(id, namespace=namespace)
        return {"versions": [v.model_dump(mode="json") for v in versions]}

    @app.delete("/v1/namespaces/{namespace}/episodes", tags=["episodes"], dependencies=[write])
    async def delete(namespace: str, id: Ids) -> dict[str, Any]:
        """Delete episodes (and what was derived from them alone); ``missing`` lists the
        ids that were not stored."""
        report = await mem().delete(id, namespace=namespace)
        return {"deleted": int(report), "missing": report.missing}

    @app.delete("/v1/namespaces/{namespace}", tags=["namespaces"], dependencies=[write])
    async def delete_namespace(namespace: str) -> dict[str, Any]:
        return {"deleted": int(await mem().delete(namespace=namespace))}

    @app.post("/v1/namespaces/{namespace}/search", tags=["reading"], dependencies=[read])
    async def search(namespace: str, body: SearchBody) -> dict[str, Any]:
        """Best hits with the episodes they rest on, and the context they render to."""
        result = await mem().search(
            body.query, namespace=namespace, k=body.k, recipe=body.recipe, filters=body.filters
        )
        return result.model_dump(mode="json")

    @app.post("/v1/namespaces/{namespace}/ask", tags=["reading"], dependencies=[read])
    async def ask(namespace: str, body: AskBody) -> dict[str, Any]:
        """An answer citing episode ids, or ``abstained`` when memory does not hold it."""
        answer = await mem().ask(
            body.question,
            namespace=namespace,
            k=body.k,
            recipe=body.recipe,
            filters=body.filters,
        )
        return answer.model_dump(mode="json")

    @app.get("/v1/namespaces/{namespace}/show/{name}", tags=["reading"], dependencies=[read])
    async def show(namespace: str, name: str) -> dict[str, Any]:
        nodes = await mem().show(name, namespace=namespace)
        return {"nodes": [n.model_dump(mode="json") for n in nodes]}

    @app.get("/v1/namespaces/{namespace}/stats", tags=["namespaces"], dependencies=[read])
    async def stats(namespace: str) -> dict[str, Any]:
        return await mem().stats(namespace)

    @app.post("/v1/namespaces/{namespace}/build", tags=["building"], dependencies=[write])
    async def build(namespace: str, body: BuildBody) -> dict[str, Any]:
        """Fold pending episodes in now (the worker does it in the background anyway)."""
        reports = await mem().build(namespace, recipe=body.recipe, tier=body.tier)
        return {"reports": [r.model_dump(mode="json") for r in reports]}

    @app.post("/v1/namespaces/{namespace}/retry", tags=["building"], dependencies=[write])
    async def retry(namespace: str) -> dict[str, int]:
        """Queue failed enrichments again."""
        return {"queued": await mem().retry(namespace)}

    @app.get("/v1/keys", tags=["keys"])
    async def list_keys(request: Request) -> dict[str, Any]:
        """The keys (never their text) for the namespaces the admin key reaches."""
        key = await caller(request, "admin")
        found = await asyncio.to_thread(mem().store.api_keys)
        shown = [k for k in found if key is None or _within(key, k.namespaces)]
        return {"keys": [k.model_dump() for k in shown]}

    @app.post("/v1/keys", tags=["keys"])
    async def create_key(request: Request, body: KeyBody) -> dict[str, Any]:
        """A new key, shown once; an admin key makes keys only for namespaces it reaches."""
        key = await caller(request, "admin")
        if key is not None and not _within(key, body.namespaces):
            raise keys.Forbidden("an admin key makes keys only for the namespaces it reaches")
        text, made = await asyncio.to_thread(
            keys.make_key, mem().store, body.namespaces, body.scope, body.label
        )
        return {"key": text, **made.model_dump()}

    @app.delete("/v1/keys/{key_id}", tags=["keys"])
    async def revoke_key(request: Request, key_id: int) -> dict[str, bool]:
        key = await caller(request, "admin")
        found = {k.id: k for k in await asyncio.to_thread(mem().store.api_keys)}
        if key_id not in found or (key is not None and not _within(key, found[key_id].namespaces)):
            raise _NotFound(f"no key {key_id}")
        return {"revoked": await asyncio.to_thread(mem().store.revoke_api_key, key_id)}

    return app


def _within(key: ApiKey, namespaces: list[str]) -> bool:
    return "*" in key.namespaces or all(n != "*" and key.reaches(n) for n in namespaces)


async def _episode(memory: AsyncMemory, namespace: str, id: str) -> Any:
    found = await memory.get([id], namespace=namespace)
    if not found:
        if namespace not in await memory.namespaces():
            raise NamespaceNotFoundError(namespace)
        raise _NotFound(f"no episode {id!r} in namespace {namespace!r}")
    return found[0]


class _NotFound(MemstrataError):
    pass


# errors ------------------------------------------------------------------------------------
_STATUS: list[tuple[type[Exception], int, str]] = [
    (ConflictError, 409, "conflict"),
    (NamespaceNotFoundError, 404, "namespace_not_found"),
    (_NotFound, 404, "not_found"),
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


def _errors(app: FastAPI) -> None:
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


class _BodyLimit:
    """Refuses a body over ``limit`` bytes with 413, by its Content-Length or while it is
    streamed, before the app reads it."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            await _too_large(self.limit)(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise _TooLarge
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await _too_large(self.limit)(scope, receive, send)


class _McpKeys:
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


class _TooLarge(Exception):
    pass


def _too_large(limit: int) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    return error(413, "too_large", f"the request body is over {limit} bytes")


__all__ = ["MAX_BODY", "create_app", "error"]
