"""The building of a namespace's structures: where it stands (``stats``), building now,
and queueing failed enrichments again."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from memstrata.service.bodies import BuildBody, RetryBody
from memstrata.service.routes.common import NS, Mem, key_of, read, write

router = APIRouter()


@router.get(NS + "/stats", tags=["namespaces"], dependencies=[read])
async def stats(request: Request, namespace: str, memory: Mem) -> dict[str, Any]:
    """Counts, build queue per builder, failures, LLM calls per stage; where the store
    lives and its size only for an admin key of the whole store (or an open store)."""
    found = await memory.stats(namespace)
    key = key_of(request)
    if key is not None and not key.whole_store():
        found.pop("store", None)
        found.pop("bytes", None)
    return found


@router.post(NS + "/build", tags=["building"], dependencies=[write])
async def build(namespace: str, body: BuildBody, memory: Mem) -> dict[str, Any]:
    """Fold pending episodes in now (the worker does it in the background anyway)."""
    reports = await memory.build(
        namespace, recipe=body.recipe, tier=body.tier, rebuild=body.rebuild
    )
    return {"reports": [r.model_dump(mode="json") for r in reports]}


@router.post(NS + "/retry", tags=["building"], dependencies=[write])
async def retry(namespace: str, memory: Mem, body: RetryBody | None = None) -> dict[str, int]:
    """Queue failed enrichments again (of one builder, if named)."""
    builder = None if body is None else body.builder
    return {"queued": await memory.retry(namespace, builder=builder)}
