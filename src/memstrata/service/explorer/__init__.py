"""The web explorer: a page at ``/`` over the REST API, and the endpoints only it needs.

The page is static (plain ES modules and CSS in ``static/``, nothing fetched from
elsewhere) and calls the API with the key it is given, so it can do exactly what that
key can. Its own endpoints: ``/v1/whoami`` (the key's scope, to hide what it may not
do), the designs' views (:mod:`memstrata.engine.views`) and the records derived from
one episode (``AsyncMemory.inspect``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from memstrata.engine.views import MAX_LIMIT, ViewQuery
from memstrata.service import keys
from memstrata.service.http import PAGE_POLICY
from memstrata.service.routes import add_routes
from memstrata.service.routes.common import NS, Mem, caller, read

STATIC = Path(__file__).parent / "static"
#: what the page may load and run: its own files only, never an inline script (the guard
#: gives every HTML page a policy; /explorer/index.html gets this one too)
POLICY = PAGE_POLICY
#: records listed as derived from one episode, at most
DERIVED_LIMIT = 200

router = APIRouter()


def install(app: FastAPI) -> None:
    """Add the page, its files and its endpoints to ``app``."""
    add_routes(app, router)
    app.mount("/explorer", StaticFiles(directory=STATIC), name="explorer")


@router.get("/", include_in_schema=False)
async def page() -> FileResponse:
    headers = {"Content-Security-Policy": POLICY, "Cache-Control": "no-cache"}
    return FileResponse(STATIC / "index.html", headers=headers)


@router.get("/v1/whoami", tags=["service"])
async def whoami(request: Request, memory: Mem) -> dict[str, Any]:
    """The presented key's scope and namespaces; ``scope`` null when the store is
    guarded but no key was presented (the explorer then asks for one). An open store
    (no key ever made, or reopened) answers scope ``admin`` over every namespace."""
    has_key = keys.presented(request.headers.get("authorization"), None)
    has_key = has_key or request.headers.get("x-api-key")
    if not has_key and not await memory.keys.is_open():
        return {"scope": None, "namespaces": [], "keys": True}
    key = await caller(request, "read")
    if key is None:
        return {"scope": "admin", "namespaces": ["*"], "keys": False}
    return {"scope": key.scope, "namespaces": key.namespaces, "label": key.label, "keys": True}


@router.get(NS + "/views", tags=["reading"], dependencies=[read])
async def views(namespace: str, memory: Mem) -> dict[str, Any]:
    """The designs' views that have records to show in this namespace."""
    return {"views": await memory.inspect.views(namespace)}


@router.get(NS + "/views/{name:segment}", tags=["reading"], dependencies=[read])
async def view(
    namespace: str,
    name: str,
    memory: Mem,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 200,
    focus: str | None = None,
    depth: Annotated[int | None, Query(ge=0, le=64)] = None,
) -> dict[str, Any]:
    """One view, cut to ``limit`` nodes around ``focus`` (a node id) or from the
    top, ``depth`` levels deep for a tree."""
    query = ViewQuery(limit=limit, focus=focus, depth=depth)
    drawn = await memory.inspect.view(namespace, name, query)
    return drawn.model_dump(mode="json")


@router.get(NS + "/derived", tags=["reading"], dependencies=[read])
async def derived(
    namespace: str, memory: Mem, episode: Annotated[str, Query(description="an episode id")]
) -> dict[str, Any]:
    """The records whose provenance names ``episode``, with the spans they rest on
    (reads the namespace's records: an inspection call, not a hot path)."""
    found = await memory.inspect.derived(namespace, episode)
    return {"records": found[:DERIVED_LIMIT], "more": len(found) > DERIVED_LIMIT}
