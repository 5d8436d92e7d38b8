"""The store's namespaces as a key sees them, and the recipes it knows."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from memstrata.service.routes.common import Mem, key_of, read

router = APIRouter()


@router.get("/v1/namespaces", tags=["namespaces"], dependencies=[read])
async def namespaces(request: Request, memory: Mem) -> dict[str, list[str]]:
    """The namespaces in the store that the caller's key reaches."""
    key = key_of(request)
    names = await memory.namespaces()
    return {"namespaces": [n for n in names if key is None or key.reaches(n)]}


@router.get("/v1/recipes", tags=["namespaces"], dependencies=[read])
async def recipes(memory: Mem) -> dict[str, Any]:
    """Every recipe: name, description, builders, routes, answerer."""
    return {"recipes": await memory.recipes()}
