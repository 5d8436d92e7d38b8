"""Whether the service answers: the process (``/v1/health``, no key, nothing read) and
its store (``/v1/ready``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memstrata.service.routes.common import Mem

router = APIRouter()


@router.get("/v1/health", tags=["service"])
async def health() -> dict[str, str]:
    """The process answers."""
    return {"status": "ok"}


@router.get("/v1/ready", tags=["service"])
async def ready(memory: Mem) -> dict[str, Any]:
    """The store answers (503 while it cannot); needs no key and tells nothing of what
    the store holds."""
    await memory.keys.guarded()
    return {"status": "ready"}
