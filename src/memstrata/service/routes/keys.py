"""API keys, for an admin key: list, create and revoke keys for the namespaces it reaches
(an admin key of the whole store, ``*``, for any). A key's text is shown once, at its
creation; a key the caller may not manage does not exist for it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from memstrata.service import keys
from memstrata.service.bodies import KeyBody
from memstrata.service.http import NotFound
from memstrata.service.routes.common import Mem, admin, key_of
from memstrata.store.base import ApiKey

router = APIRouter()


@router.get("/v1/keys", tags=["keys"], dependencies=[admin])
async def list_keys(request: Request, memory: Mem) -> dict[str, Any]:
    """The keys (never their text) for the namespaces the admin key reaches."""
    key = key_of(request)
    found = await memory.keys.list()
    shown = [k for k in found if key is None or _within(key, k.namespaces)]
    return {"keys": [k.model_dump() for k in shown]}


@router.post("/v1/keys", tags=["keys"], dependencies=[admin])
async def create_key(request: Request, body: KeyBody, memory: Mem) -> dict[str, Any]:
    """A new key, shown once; an admin key makes keys only for namespaces it reaches."""
    key = key_of(request)
    if key is not None and not _within(key, body.namespaces):
        raise keys.Forbidden("an admin key makes keys only for the namespaces it reaches")
    text, made = await memory.keys.create(body.namespaces, body.scope, body.label)
    return {"key": text, **made.model_dump()}


@router.delete("/v1/keys/{key_id}", tags=["keys"], dependencies=[admin])
async def revoke_key(request: Request, key_id: str, memory: Mem) -> dict[str, bool]:
    """Revoke a key by its id (``key_...``). Revoking the last key leaves the store
    guarded: only the operator reopens it (``memstrata keys reopen``)."""
    key = key_of(request)
    found = {k.id: k for k in await memory.keys.list()}
    if key_id not in found or (key is not None and not _within(key, found[key_id].namespaces)):
        raise NotFound(f"no key {key_id!r}")
    return {"revoked": await memory.keys.revoke(key_id)}


def _within(key: ApiKey, namespaces: list[str]) -> bool:
    return "*" in key.namespaces or all(n != "*" and key.reaches(n) for n in namespaces)
