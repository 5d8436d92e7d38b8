"""The web explorer: a page at ``/`` over the REST API, and the endpoints only it needs.

The page is static (plain ES modules and CSS in ``static/``, nothing fetched from
elsewhere) and calls the API with the key it is given, so it can do exactly what that
key can. Its own endpoints: ``/v1/whoami`` (the key's scope, to hide what it may not
do), the designs' views (:mod:`memstrata.engine.views`) and the records derived from
one episode.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from memstrata.engine.views import MAX_LIMIT, ViewQuery
from memstrata.memory import AsyncMemory
from memstrata.models import load_kinds
from memstrata.service import keys
from memstrata.service.http import PAGE_POLICY, NotFound
from memstrata.store.base import ApiKey

STATIC = Path(__file__).parent / "static"
NS = "/v1/namespaces/{namespace:segment}"
#: what the page may load and run: its own files only, never an inline script (the guard
#: gives every HTML page a policy; /explorer/index.html gets this one too)
POLICY = PAGE_POLICY
#: records listed as derived from one episode, at most
DERIVED_LIMIT = 200

Caller = Callable[[Request, str], Awaitable[ApiKey | None]]


def install(app: FastAPI, mem: Callable[[], AsyncMemory], caller: Caller, read: Any) -> None:
    """Add the page, its files and its endpoints to ``app``; ``read`` is the app's
    read-scope dependency (a key reaching the path's namespace)."""

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        headers = {"Content-Security-Policy": POLICY, "Cache-Control": "no-cache"}
        return FileResponse(STATIC / "index.html", headers=headers)

    app.mount("/explorer", StaticFiles(directory=STATIC), name="explorer")

    @app.get("/v1/whoami", tags=["service"])
    async def whoami(request: Request) -> dict[str, Any]:
        """The presented key's scope and namespaces; ``scope`` null when the store is
        guarded but no key was presented (the explorer then asks for one). An open store
        (no key ever made, or reopened) answers scope ``admin`` over every namespace."""
        has_key = keys.presented(request.headers.get("authorization"), None)
        has_key = has_key or request.headers.get("x-api-key")
        if not has_key and not await keys.is_open(mem().store):
            return {"scope": None, "namespaces": [], "keys": True}
        key = await caller(request, "read")
        if key is None:
            return {"scope": "admin", "namespaces": ["*"], "keys": False}
        return {"scope": key.scope, "namespaces": key.namespaces, "label": key.label, "keys": True}

    @app.get(NS + "/views", tags=["reading"], dependencies=[read])
    async def views(namespace: str) -> dict[str, Any]:
        """The designs' views that have records to show in this namespace."""
        await mem()._known(namespace)
        stats = await asyncio.to_thread(mem().store.stats, namespace)
        owners = {
            b for s in stats for b, kinds in s.records_by_builder.items() if any(kinds.values())
        }
        found = mem().engine.registry.views.values()
        return {"views": [v.summary(d) for d, v in found if v.builder in owners]}

    @app.get(NS + "/views/{name:segment}", tags=["reading"], dependencies=[read])
    async def view(
        namespace: str,
        name: str,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 200,
        focus: str | None = None,
        depth: Annotated[int | None, Query(ge=0, le=64)] = None,
    ) -> dict[str, Any]:
        """One view, cut to ``limit`` nodes around ``focus`` (a node id) or from the
        top, ``depth`` levels deep for a tree."""
        await mem()._known(namespace)
        found = mem().engine.registry.views.get(name)
        if found is None:
            raise NotFound(f"no view {name!r} (the namespace's /views lists them)")
        query = ViewQuery(limit=limit, focus=focus, depth=depth)
        drawn = await asyncio.to_thread(found[1].render, mem().engine.base, namespace, query)
        return drawn.model_dump(mode="json")

    @app.get(NS + "/derived", tags=["reading"], dependencies=[read])
    async def derived(
        namespace: str, episode: Annotated[str, Query(description="an episode id")]
    ) -> dict[str, Any]:
        """The records whose provenance names ``episode``, with the spans they rest on
        (reads the namespace's records: an inspection call, not a hot path)."""
        await mem()._known(namespace)
        found = await asyncio.to_thread(_derived, mem(), namespace, episode)
        return {"records": found[:DERIVED_LIMIT], "more": len(found) > DERIVED_LIMIT}


def _derived(memory: AsyncMemory, namespace: str, episode: str) -> list[dict[str, Any]]:
    out = []
    for kind in load_kinds():
        for rec in memory.store.get_records(namespace, kind, builder=None):
            spans = [s for s in rec.sources if s.episode == episode]
            if spans:
                out.append(
                    {
                        "kind": kind,
                        "id": rec.id,
                        "builder": rec.builder,
                        "text": rec.search_text(),
                        "spans": [s.model_dump() for s in spans],
                    }
                )
    return out
