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
import re
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
)

from memstrata import jobs
from memstrata.config import Config
from memstrata.engine import Answer
from memstrata.engine.registry import Registry
from memstrata.engine.worker import run_worker
from memstrata.errors import MemstrataError, NamespaceNotFoundError
from memstrata.ingest import ID_PATTERN
from memstrata.memory import AsyncMemory
from memstrata.models import Episode, EpisodeIn, Moment, SearchResult
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
from memstrata.service.limits import MAX_EPISODES, MAX_K, MAX_PAGE, MAX_QUERIES
from memstrata.service.mcp_optional import mcp_missing, mcp_server
from memstrata.service.openapi import install_openapi
from memstrata.store import SearchFilters
from memstrata.store.base import ApiKey
from memstrata.store.names import NAMESPACE_PATTERN

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
#: a namespace is any printable text, "/" included: one path segment (a "/" in it sent as
#: %2F, see :class:`~memstrata.service.http.Segment`)
NS = "/v1/namespaces/{namespace:segment}"
#: a number where a time is due: pydantic would read it as Unix seconds
_NUMBER = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")


def _iso(value: Any) -> Any:
    """A time is ISO 8601 text (or a datetime): a number, or digits in a string, is
    refused rather than read as seconds since 1970."""
    if isinstance(value, datetime) or (isinstance(value, str) and not _NUMBER.fullmatch(value)):
        return value
    raise ValueError("expected an ISO 8601 time such as 2024-03-02T10:21:00")


#: a time in a body or a query: ISO 8601 only
IsoTime = Annotated[Moment, BeforeValidator(_iso)]


def _integral(value: Any) -> Any:
    """A count is a JSON integer: ``5`` or ``5.0`` (the same number to JSON Schema), not
    ``true``, ``"5"`` or ``5.5``."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("expected an integer")
    return value


#: counts in a body: integers, checked strictly (see :func:`_integral`); the bounds come
#: before the check so that the schema shows them
K = Annotated[int, Field(ge=1, le=MAX_K), BeforeValidator(_integral)]
Budget = Annotated[int, Field(ge=-1), BeforeValidator(_integral)]
#: text that must say something: one character that is neither white space nor a
#: control character, as the core's own check (``str.strip``) reads it
SAYS = r"[^\s\x1c-\x1f]"
#: a text that says something (a query, a question, an episode's text)
Said = Annotated[StrictStr, Field(pattern=SAYS)]


class EpisodeBody(EpisodeIn):
    """One episode to remember; ``id`` makes the add idempotent. An unknown field is an
    error, not dropped."""

    model_config = ConfigDict(extra="forbid")

    text: Said
    id: Annotated[StrictStr, Field(pattern=ID_PATTERN)] | None = None
    occurred_at: IsoTime | None = None


class AddBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    episodes: list[EpisodeBody] = Field(min_length=1, max_length=MAX_EPISODES)
    replace: StrictBool = Field(
        default=False, description="replace ids stored with other content (kept in history)"
    )


class UpdateBody(BaseModel):
    """New text, and any context to change: a field left out keeps its stored value,
    null clears it (``metadata`` replaces the whole mapping)."""

    model_config = ConfigDict(extra="forbid")

    text: Said
    speaker: StrictStr | None = None
    role: StrictStr | None = None
    occurred_at: IsoTime | None = None
    session: StrictStr | None = None
    metadata: dict[str, Any] | None = None
    keep_history: StrictBool = Field(
        default=True, description="false: erase the replaced text and earlier versions"
    )


class FiltersBody(BaseModel):
    """Restrictions applied inside every route before ranking (an unknown key is an
    error, not ignored)."""

    model_config = ConfigDict(extra="forbid")

    speakers: list[StrictStr] | None = None
    sessions: list[StrictStr] | None = None
    since: IsoTime | None = None
    until: IsoTime | None = None

    def filters(self) -> SearchFilters:
        return SearchFilters(**self.model_dump())


class _Reading(BaseModel):
    """What a search and an ask share: how many hits, with which recipe, filtered how,
    fitted to which budget. Types are strict: ``"5"`` or ``true`` is not a ``k``."""

    model_config = ConfigDict(extra="forbid")

    k: K | None = None
    recipe: StrictStr | None = None
    filters: FiltersBody | None = None
    max_tokens: Budget | None = Field(
        default=-1, description="the context's token budget: -1 the configured, null none"
    )
    adaptive: StrictBool = Field(
        default=False, description="cut to as many source turns as the evidence needs (<= k)"
    )

    def options(self) -> dict[str, Any]:
        """The keywords of ``AsyncMemory.search`` these fields stand for."""
        where = None if self.filters is None else self.filters.filters()
        return dict(
            k=self.k,
            recipe=self.recipe,
            filters=where,
            max_tokens=self.max_tokens,
            adaptive=self.adaptive,
        )


class SearchBody(_Reading):
    query: Said


class SearchManyBody(_Reading):
    queries: list[Said] = Field(min_length=1, max_length=MAX_QUERIES)


class AskBody(_Reading):
    question: Said


#: what a key may name: a namespace, or "*" for all of them
KEY_NAMESPACE = rf"{NAMESPACE_PATTERN}|^\*$"


class KeyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespaces: list[Annotated[StrictStr, Field(pattern=KEY_NAMESPACE)]] = Field(
        min_length=1, description='namespaces it reaches; "*": all'
    )
    scope: Literal["read", "write", "admin"] = "read"
    label: str | None = None


class BuildBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recipe: StrictStr | None = None
    tier: StrictStr | None = None
    rebuild: StrictBool = Field(default=False, description="process every episode again")


class RetryBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    builder: StrictStr | None = Field(default=None, description="one builder's only")


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

    agent = mcp_server(lambda: state["memory"])

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        memory = await AsyncMemory.open(config=config)
        state["memory"] = memory
        tasks = [memory.start_worker()] if workers else []
        for i in range(1, workers):  # more drains at once, each starting at another namespace
            tasks.append(asyncio.create_task(_worker(memory, i)))
        try:
            async with agent.session_manager.run() if agent else contextlib.nullcontext():
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
    install_openapi(app, list(Registry.load(config.recipes).recipes))
    # MCP over streamable HTTP, with the same keys: any valid key may connect (the guard
    # checks it), and each tool checks what it reaches (the SDK's transport is below /mcp/).
    if agent is not None:
        app.mount("/mcp", agent.streamable_http_app(streamable_http_path="/"))
    else:
        app.mount("/mcp", mcp_missing)

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
        """Every recipe: name, description, builders, routes, answerer."""
        return {"recipes": await mem().recipes()}

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
        after: Annotated[
            str | None,
            Query(min_length=1, max_length=200, description="the `next` of the previous page"),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
        speaker: Annotated[list[str] | None, Query()] = None,
        session: Annotated[list[str] | None, Query()] = None,
        since: Annotated[IsoTime | None, Query()] = None,
        until: Annotated[IsoTime | None, Query()] = None,
    ) -> dict[str, Any]:
        """Episodes in the order they were added, a page at a time, optionally filtered
        (speakers, sessions, a time window); ``next`` is an opaque cursor for the next
        page (null on the last), good in this namespace only."""
        where = SearchFilters(speakers=speaker, sessions=session, since=since, until=until)
        page = await mem().list(namespace=namespace, after=after, limit=limit, filters=where)
        return {"episodes": [_out(e) for e in page.episodes], "next": page.next}

    @app.get(NS + "/episodes/{id:segment}/history", tags=["episodes"], dependencies=[read])
    async def history(namespace: str, id: str) -> dict[str, Any]:
        """The versions updates replaced, oldest first. The path is the id's own segment
        (a "/" in it sent as %2F) followed by ``/history``."""
        return await _show(mem(), namespace, id, history=True)

    @app.get(NS + "/episodes/{id:segment}", tags=["episodes"], dependencies=[read])
    async def get(namespace: str, id: str) -> dict[str, Any]:
        """One episode; its id is one path segment, a "/" in it sent as %2F."""
        return await _show(mem(), namespace, id, history=False)

    @app.put(NS + "/episodes/{id:segment}", tags=["episodes"], dependencies=[write])
    async def update(namespace: str, id: str, body: UpdateBody) -> dict[str, Any]:
        """Replace an episode's text (and any context given: a field left out keeps its
        value, null clears it); the old version stays in its history. ``job`` follows
        the rebuilding of what rests on it."""
        await _episode(mem(), namespace, id)
        changes = {f: getattr(body, f) for f in body.model_fields_set - {"text", "keep_history"}}
        episode = await mem().update(
            id, body.text, namespace=namespace, keep_history=body.keep_history, **changes
        )
        job = await jobs.start(mem(), namespace, "update", [id])
        return {**_out(episode), "job": _job(job)}

    @app.delete(NS + "/episodes", tags=["episodes"], dependencies=[write])
    async def delete(namespace: str, id: Ids) -> dict[str, Any]:
        """Delete episodes (and what was derived from them alone); ``missing`` lists the
        ids that were not stored."""
        report = await mem().delete(id, namespace=namespace)
        return {"deleted": int(report), "missing": report.missing}

    @app.delete(NS + "", tags=["namespaces"], dependencies=[write])
    async def delete_namespace(namespace: str) -> dict[str, Any]:
        """Delete the namespace and everything in it; the number of episodes it held."""
        return {"deleted": await mem().delete_namespace(namespace)}

    @app.post(NS + "/search", tags=["reading"], dependencies=[read], response_model=SearchResult)
    async def search(namespace: str, body: SearchBody) -> Response:
        """Best hits with the episodes they rest on, and the context they render to."""
        return _json(await mem().search(body.query, namespace=namespace, **body.options()))

    @app.post(NS + "/search_many", tags=["reading"], dependencies=[read])
    async def search_many(namespace: str, body: SearchManyBody) -> Response:
        """A search per query, the queries embedded together (faster than one by one):
        ``{"results": [...]}`` in the order of ``queries``."""
        found = await mem().search_many(body.queries, namespace=namespace, **body.options())
        results = ",".join(r.model_dump_json() for r in found)
        return Response('{"results":[' + results + "]}", media_type="application/json")

    @app.post(NS + "/ask", tags=["reading"], dependencies=[read], response_model=Answer)
    async def ask(namespace: str, body: AskBody) -> Response:
        """An answer citing episode ids, or ``abstained`` when memory does not hold it."""
        return _json(await mem().ask(body.question, namespace=namespace, **body.options()))

    @app.get(NS + "/show/{name:segment}", tags=["reading"], dependencies=[read])
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
        reports = await mem().build(
            namespace, recipe=body.recipe, tier=body.tier, rebuild=body.rebuild
        )
        return {"reports": [r.model_dump(mode="json") for r in reports]}

    @app.post(NS + "/retry", tags=["building"], dependencies=[write])
    async def retry(namespace: str, body: RetryBody | None = None) -> dict[str, int]:
        """Queue failed enrichments again (of one builder, if named)."""
        builder = None if body is None else body.builder
        return {"queued": await mem().retry(namespace, builder=builder)}

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


async def _episode(memory: AsyncMemory, namespace: str, id: str) -> Episode:
    found = await memory.get(id, namespace=namespace)
    if not found:
        if namespace not in await memory.namespaces():
            raise NamespaceNotFoundError(namespace)
        raise NotFound(f"no episode {id!r} in namespace {namespace!r}")
    return found[0]


async def _show(memory: AsyncMemory, namespace: str, id: str, history: bool) -> dict[str, Any]:
    """An episode, or the versions updates replaced of it."""
    episode = await _episode(memory, namespace, id)
    if not history:
        return _out(episode)
    versions = await memory.history(id, namespace=namespace)
    return {"versions": [v.model_dump(mode="json") for v in versions]}


def _out(episode: Episode) -> dict[str, Any]:
    """An episode as the service shows it: without the store's key, a counter of every
    namespace's writes whose gaps would tell one tenant of another's."""
    return episode.model_dump(mode="json", exclude={"key"})


__all__ = ["BODY_TIMEOUT_S", "MAX_BODY", "MAX_INFLIGHT", "create_app", "error"]
