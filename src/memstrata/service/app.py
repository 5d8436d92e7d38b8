"""The REST service: the verbs of :class:`~memstrata.memory.AsyncMemory` under ``/v1``.

One memory (one store) per app, opened in the app's lifespan on the server's own event
loop, with the build worker running beside the requests (``build.mode = "queue"``): an
add commits its episodes and returns at once (they are searchable by the store's own
routes from then on), and the structures follow in the background. Errors are JSON
``{"error": {"code", "message"}}`` with the status that says what went wrong, never a
stack trace. Every request passes :class:`~memstrata.service.http.Guard` first: it is
authenticated from its headers before its body is read, and each route declares the scope
it needs through its dependency (``read``, ``write``, ``admin``), which the guard reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from memstrata import jobs
from memstrata.config import Config
from memstrata.engine import Answer
from memstrata.engine.worker import run_worker
from memstrata.errors import MemstrataError, NamespaceNotFoundError
from memstrata.memory import AsyncMemory
from memstrata.models import EpisodeIn, SearchResult
from memstrata.service import keys
from memstrata.service.explorer import install as install_explorer
from memstrata.service.http import (
    KEY,
    SCOPE_ATTR,
    BodyLimit,
    Guard,
    NotFound,
    describe,
    error,
    install_errors,
    route_needs,
)
from memstrata.service.openapi import install_openapi
from memstrata.store import SearchFilters
from memstrata.store.base import ApiKey

logger = logging.getLogger("memstrata.service")

Ids = Annotated[list[str], Query(min_length=1, description="ids to delete")]

#: the largest request body read, in bytes (a batch of a few thousand turns)
MAX_BODY = 10 * 1024 * 1024
#: requests handled at once; more are answered 429 at once rather than queued unseen
MAX_INFLIGHT = 256
#: how long a request body may take to arrive, in seconds (then 408, connection closed)
BODY_TIMEOUT_S = 30.0
#: how often an event stream looks at its job
SSE_POLL_S = 0.25
#: how long an event stream may stay silent before it sends a comment
SSE_HEARTBEAT_S = 15.0
#: a namespace is any printable text, "/" included: the path segment takes it whole
NS = "/v1/namespaces/{namespace:path}"


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
    adaptive: bool = Field(
        default=False, description="cut to as many source turns as the evidence needs (<= k)"
    )


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


def create_app(
    config: Config,
    *,
    max_body: int = MAX_BODY,
    workers: int = 1,
    max_inflight: int = MAX_INFLIGHT,
    host: str = "127.0.0.1",
    body_timeout_s: float = BODY_TIMEOUT_S,
) -> FastAPI:
    """The app over the store ``config.store`` names, with ``workers`` build workers in
    its process (0: none, for a store whose ``memstrata worker`` processes build apart).
    ``host`` is the address the server binds: an open store (no key) is served only when
    it is a loopback one, and only under a loopback host name."""
    state: dict[str, AsyncMemory] = {}

    from memstrata.service.mcp import build_server

    agent = build_server(memory=lambda: state["memory"])
    mcp_app = agent.streamable_http_app(streamable_http_path="/")

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        memory = await AsyncMemory.open(config=config)
        state["memory"] = memory
        tasks = [memory.start_worker()] if workers else []
        for i in range(1, workers):  # more drains at once, each starting at another namespace
            tasks.append(asyncio.create_task(_worker(memory, i)))
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
    app.add_middleware(BodyLimit, limit=max_body)
    app.add_middleware(
        Guard,
        memory=lambda: state["memory"],
        needs=route_needs(app, {"/mcp": "read"}),
        host=host,
        limit=max_inflight,
        body_timeout_s=body_timeout_s,
    )
    install_errors(app)
    install_openapi(app)
    # MCP over streamable HTTP, with the same keys: any valid key may connect (the guard
    # checks it), and each tool checks what it reaches (the SDK's transport is below /mcp/).
    app.mount("/mcp", mcp_app)

    def mem() -> AsyncMemory:
        return state["memory"]

    async def caller(request: Request, scope: str) -> ApiKey | None:
        """The request's key (None while the store is open); 401 or 403 as it deserves."""
        loopback = keys.loopback(host)
        return await keys.check(mem().store, request.headers, scope, bound_to_loopback=loopback)

    def scoped(scope: str) -> Any:
        """The dependency that declares a route's scope: the guard reads it and checks the
        key, and the route receives the key the guard found."""

        async def check(request: Request) -> ApiKey | None:
            if KEY in request.scope:
                return request.scope[KEY]
            key = await caller(request, scope)  # not behind the guard: check here
            namespace = request.path_params.get("namespace")
            if key is not None and namespace is not None and not key.reaches(namespace):
                raise NamespaceNotFoundError(namespace)  # as if it did not exist
            return key

        setattr(check, SCOPE_ATTR, scope)
        return Depends(check)

    read, write, admin = scoped("read"), scoped("write"), scoped("admin")

    @app.get("/v1/health", tags=["service"])
    async def health() -> dict[str, str]:
        """The process answers."""
        return {"status": "ok"}

    @app.get("/v1/ready", tags=["service"])
    async def ready() -> dict[str, Any]:
        """The store answers (503 while it cannot); needs no key and tells nothing of what
        the store holds."""
        await asyncio.to_thread(mem().store.keys_guarded)
        return {"status": "ready"}

    @app.get("/v1/namespaces", tags=["namespaces"], dependencies=[read])
    async def namespaces(request: Request) -> dict[str, list[str]]:
        """The namespaces in the store that the caller's key reaches."""
        key = request.scope.get(KEY)
        names = await mem().namespaces()
        return {"namespaces": [n for n in names if key is None or key.reaches(n)]}

    @app.get("/v1/recipes", tags=["namespaces"], dependencies=[read])
    async def recipes() -> dict[str, Any]:
        return {"recipes": mem().recipes()}

    @app.post(NS + "/episodes", tags=["episodes"], dependencies=[write])
    async def add(namespace: str, body: AddBody) -> dict[str, Any]:
        """Remember episodes: searchable once this returns. Ids already stored with the
        same content are ``existing`` (a retried request changes nothing); with other
        content ``conflicts``, left as they were unless ``replace``. ``job`` follows the
        building of their structures (null when the recipe builds none)."""
        items = [e.model_dump(exclude_none=True) for e in body.episodes]
        report = await mem().add_many(items, namespace=namespace, replace=body.replace)
        ids = report.added + report.updated + report.existing
        job = await jobs.start(mem(), namespace, "add", ids)
        return {**report.model_dump(), "job": _job(job)}

    @app.get(NS + "/episodes", tags=["episodes"], dependencies=[read])
    async def list_episodes(
        namespace: str,
        after: Annotated[int, Query(ge=0, description="the `next` of the previous page")] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        speaker: Annotated[list[str] | None, Query()] = None,
        session: Annotated[list[str] | None, Query()] = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> dict[str, Any]:
        """Episodes in the order they were added, a page at a time, optionally filtered
        (speakers, sessions, a time window); ``next`` is null on the last page."""
        await mem()._known(namespace)
        where = SearchFilters(speakers=speaker, sessions=session, since=since, until=until)
        found, cursor = await asyncio.to_thread(_page, mem(), namespace, where, after, limit)
        return {"episodes": [e.model_dump(mode="json") for e in found], "next": cursor}

    @app.get(NS + "/episodes/{id:path}/history", tags=["episodes"], dependencies=[read])
    async def history(namespace: str, id: str) -> dict[str, Any]:
        await _episode(mem(), namespace, id)
        versions = await mem().history(id, namespace=namespace)
        return {"versions": [v.model_dump(mode="json") for v in versions]}

    @app.get(NS + "/episodes/{id:path}", tags=["episodes"], dependencies=[read])
    async def get(namespace: str, id: str) -> dict[str, Any]:
        return (await _episode(mem(), namespace, id)).model_dump(mode="json")

    @app.put(NS + "/episodes/{id:path}", tags=["episodes"], dependencies=[write])
    async def update(namespace: str, id: str, body: UpdateBody) -> dict[str, Any]:
        """Replace an episode's text; the old version stays in its history. ``job``
        follows the rebuilding of what rests on it."""
        await _episode(mem(), namespace, id)
        episode = await mem().update(id, body.text, namespace=namespace)
        job = await jobs.start(mem(), namespace, "update", [id])
        return {**episode.model_dump(mode="json"), "job": _job(job)}

    @app.delete(NS + "/episodes", tags=["episodes"], dependencies=[write])
    async def delete(namespace: str, id: Ids) -> dict[str, Any]:
        """Delete episodes (and what was derived from them alone); ``missing`` lists the
        ids that were not stored."""
        report = await mem().delete(id, namespace=namespace)
        return {"deleted": int(report), "missing": report.missing}

    @app.delete(NS + "", tags=["namespaces"], dependencies=[write])
    async def delete_namespace(namespace: str) -> dict[str, Any]:
        return {"deleted": int(await mem().delete(namespace=namespace))}

    @app.post(NS + "/search", tags=["reading"], dependencies=[read], response_model=SearchResult)
    async def search(namespace: str, body: SearchBody) -> Response:
        """Best hits with the episodes they rest on, and the context they render to."""
        result = await mem().search(
            body.query,
            namespace=namespace,
            k=body.k,
            recipe=body.recipe,
            filters=body.filters,
            adaptive=body.adaptive,
        )
        return _json(result)

    @app.post(NS + "/ask", tags=["reading"], dependencies=[read], response_model=Answer)
    async def ask(namespace: str, body: AskBody) -> Response:
        """An answer citing episode ids, or ``abstained`` when memory does not hold it."""
        answer = await mem().ask(
            body.question,
            namespace=namespace,
            k=body.k,
            recipe=body.recipe,
            filters=body.filters,
        )
        return _json(answer)

    @app.get(NS + "/show/{name}", tags=["reading"], dependencies=[read])
    async def show(namespace: str, name: str) -> dict[str, Any]:
        nodes = await mem().show(name, namespace=namespace)
        return {"nodes": [n.model_dump(mode="json") for n in nodes]}

    @app.get(NS + "/stats", tags=["namespaces"], dependencies=[read])
    async def stats(request: Request, namespace: str) -> dict[str, Any]:
        """Counts, build queue per builder, failures, LLM calls per stage; where the store
        lives and its size only for an admin key of the whole store (or an open store)."""
        found = await mem().stats(namespace)
        key = request.scope.get(KEY)
        if key is not None and not key.whole_store():
            found.pop("store", None)
            found.pop("bytes", None)
        return found

    @app.post(NS + "/build", tags=["building"], dependencies=[write])
    async def build(namespace: str, body: BuildBody) -> dict[str, Any]:
        """Fold pending episodes in now (the worker does it in the background anyway)."""
        reports = await mem().build(namespace, recipe=body.recipe, tier=body.tier)
        return {"reports": [r.model_dump(mode="json") for r in reports]}

    @app.post(NS + "/retry", tags=["building"], dependencies=[write])
    async def retry(namespace: str) -> dict[str, int]:
        """Queue failed enrichments again."""
        return {"queued": await mem().retry(namespace)}

    async def visible_job(request: Request, job_id: str) -> jobs.JobStatus:
        key = request.scope.get(KEY)
        job = await jobs.status(mem(), job_id)
        if job is None or (key is not None and not key.reaches(job.namespace)):
            raise NotFound(f"no job {job_id!r}")  # another tenant's job does not exist
        return job

    @app.get("/v1/jobs/{job_id}", tags=["jobs"], dependencies=[read])
    async def job_status(request: Request, job_id: str) -> dict[str, Any]:
        """Where a job stands: ``queued``, ``running``, ``succeeded``, ``failed`` (with
        each failure's reason) or ``removed``; read from the build marks, so it says
        ``succeeded`` only once every step is done."""
        return (await visible_job(request, job_id)).model_dump(mode="json")

    @app.get("/v1/jobs/{job_id}/events", tags=["jobs"], dependencies=[read])
    async def job_events(request: Request, job_id: str) -> StreamingResponse:
        """Server-sent events: a ``job`` event each time the job's state changes, the
        last one final (``succeeded``, ``failed`` or ``removed``); comments keep the
        connection alive meanwhile. The key is checked again at each look: the stream of
        a key revoked meanwhile ends with an ``error`` event."""
        job = await visible_job(request, job_id)
        keyed = request.scope.get(KEY) is not None

        async def still_allowed() -> None:
            now = await caller(request, "read")
            if keyed and (now is None or not now.reaches(job.namespace)):
                raise NotFound(f"no job {job_id!r}")

        async def stream() -> AsyncIterator[str]:
            follow = jobs.follow(
                mem(), job_id, SSE_POLL_S, heartbeat_s=SSE_HEARTBEAT_S, check=still_allowed
            )
            try:
                async for now in follow:
                    if await request.is_disconnected():
                        return
                    if now is None:
                        yield ": still there\n\n"  # a comment: keeps proxies from closing
                    else:
                        yield f"event: job\ndata: {json.dumps(now.model_dump(mode='json'))}\n\n"
            except MemstrataError as exc:
                _, code, message = describe(exc)
                yield f"event: error\ndata: {json.dumps({'code': code, 'message': message})}\n\n"

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
        )

    @app.get("/v1/keys", tags=["keys"], dependencies=[admin])
    async def list_keys(request: Request) -> dict[str, Any]:
        """The keys (never their text) for the namespaces the admin key reaches."""
        key = request.scope.get(KEY)
        found = await asyncio.to_thread(mem().store.api_keys)
        shown = [k for k in found if key is None or _within(key, k.namespaces)]
        return {"keys": [k.model_dump() for k in shown]}

    @app.post("/v1/keys", tags=["keys"], dependencies=[admin])
    async def create_key(request: Request, body: KeyBody) -> dict[str, Any]:
        """A new key, shown once; an admin key makes keys only for namespaces it reaches."""
        key = request.scope.get(KEY)
        if key is not None and not _within(key, body.namespaces):
            raise keys.Forbidden("an admin key makes keys only for the namespaces it reaches")
        text, made = await asyncio.to_thread(
            keys.make_key, mem().store, body.namespaces, body.scope, body.label
        )
        return {"key": text, **made.model_dump()}

    @app.delete("/v1/keys/{key_id}", tags=["keys"], dependencies=[admin])
    async def revoke_key(request: Request, key_id: str) -> dict[str, bool]:
        """Revoke a key by its id (``key_...``). Revoking the last key leaves the store
        guarded: only the operator reopens it (``memstrata keys reopen``)."""
        key = request.scope.get(KEY)
        found = {k.id: k for k in await asyncio.to_thread(mem().store.api_keys)}
        if key_id not in found or (key is not None and not _within(key, found[key_id].namespaces)):
            raise NotFound(f"no key {key_id!r}")
        return {"revoked": await asyncio.to_thread(mem().store.revoke_api_key, key_id)}

    install_explorer(app, mem, caller, read)  # the web page at / and what only it needs
    return app


def _json(model: BaseModel) -> Response:
    """A model as the response body, written once by pydantic: the hot reading routes
    skip the dump, re-validation and re-encoding a returned dict goes through (their
    ``response_model`` still documents the shape)."""
    return Response(model.model_dump_json(), media_type="application/json")


def _job(job: jobs.JobStatus | None) -> dict[str, Any] | None:
    return None if job is None else job.model_dump(mode="json")


def _page(
    memory: AsyncMemory, namespace: str, where: SearchFilters, after: int, limit: int
) -> tuple[list[Any], int | None]:
    """Up to ``limit`` admitted episodes after key ``after``, and the key to go on from
    (None: no more). A filtered page reads on until it is full or the namespace ends."""
    found: list[Any] = []
    while len(found) < limit:
        batch = memory.store.iter_episodes(namespace, after_key=after, limit=max(limit, 200))
        for episode in batch:
            after = episode.key
            if where.is_empty() or where.admits(episode):
                found.append(episode)
                if len(found) == limit:
                    return found, after
        if len(batch) < max(limit, 200):
            return found, None
    return found, after


async def _worker(memory: AsyncMemory, rotate: int) -> Any:
    """One more in-process worker, stopped with the memory's own."""
    return await run_worker(
        memory.engine,
        memory.config.recipe,
        stop=memory.worker.stop,
        poll_s=memory.config.build.poll_s,
        rotate=rotate,
    )


def _within(key: ApiKey, namespaces: list[str]) -> bool:
    return "*" in key.namespaces or all(n != "*" and key.reaches(n) for n in namespaces)


async def _episode(memory: AsyncMemory, namespace: str, id: str) -> Any:
    found = await memory.get([id], namespace=namespace)
    if not found:
        if namespace not in await memory.namespaces():
            raise NamespaceNotFoundError(namespace)
        raise NotFound(f"no episode {id!r} in namespace {namespace!r}")
    return found[0]


__all__ = ["BODY_TIMEOUT_S", "MAX_BODY", "MAX_INFLIGHT", "create_app", "error"]
