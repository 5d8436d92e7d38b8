"""API keys: made once and shown once, kept as their SHA-256, checked per request.

A key names the namespaces it reaches (``*``: all) and a scope: ``read`` (search, ask,
get, stats), ``write`` (also add, update, delete, build) or ``admin`` (also manage keys
for the namespaces it reaches). To a key, a namespace it does not reach does not exist.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import Mapping, Sequence

from memstrata.errors import InvalidInputError, MemstrataError
from memstrata.store import Store
from memstrata.store.base import WOULD_WAIT, ApiKey, check_namespace

SCOPES = ("read", "write", "admin")
PREFIX = "msk_"


def digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def make_key(
    store: Store, namespaces: Sequence[str], scope: str, label: str | None = None
) -> tuple[str, ApiKey]:
    """A new key (the only time its text exists) and its stored record."""
    if scope not in SCOPES:
        raise InvalidInputError(f"unknown scope {scope!r}; expected one of {', '.join(SCOPES)}")
    if not namespaces:
        raise InvalidInputError("a key needs at least one namespace (or '*' for all)")
    names = [n if n == "*" else check_namespace(n) for n in namespaces]
    key = PREFIX + secrets.token_urlsafe(32)
    return key, store.add_api_key(digest(key), key[:12], names, scope, label)


def live(store: Store) -> bool:
    """Whether any key is live: without one the service is open (loopback only)."""
    return any(k.revoked_at is None for k in store.api_keys())


def presented(authorization: str | None, x_api_key: str | None) -> str | None:
    """The key a request carries: ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``."""
    if x_api_key:
        return x_api_key.strip()
    if authorization and authorization[:7].lower() == "bearer ":
        return authorization[7:].strip()
    return None


class Unauthorized(MemstrataError):
    """No live key, or one that is not valid (HTTP 401)."""


class Forbidden(MemstrataError):
    """A valid key whose scope is short (HTTP 403)."""


async def check(store: Store, headers: Mapping[str, str], scope: str) -> ApiKey | None:
    """The key the request carries, if keys are in use (None while none is live: the
    open, loopback-only mode); ``Unauthorized`` without a valid live key, ``Forbidden``
    when its scope is short. The store is read at once when it can answer without
    waiting, off the event loop otherwise."""
    text = presented(headers.get("authorization"), headers.get("x-api-key"))
    found = store.read_at_once(lambda: _decide(store, text, scope))
    if found is WOULD_WAIT:
        return await asyncio.to_thread(_decide, store, text, scope)
    return found


def _decide(store: Store, text: str | None, scope: str) -> ApiKey | None:
    key = store.api_key(digest(text)) if text else None
    if key is not None and key.revoked_at is None:  # one read on the usual path
        if not key.allows(scope):
            raise Forbidden(f"this key's scope is {key.scope!r}; this needs {scope!r}")
        return key
    if not live(store):
        return None
    raise Unauthorized("a valid API key is required (Authorization: Bearer KEY)")
