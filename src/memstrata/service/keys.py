"""API keys: made once and shown once, kept as their SHA-256, checked per request.

A key names the namespaces it reaches (``*``: all) and a scope: ``read`` (search, ask,
get, stats), ``write`` (also add, update, delete, build) or ``admin`` (also manage keys
for the namespaces it reaches). To a key, a namespace it does not reach does not exist.

A store that has never had a key is *open*: the service answers without one, and only
while it listens on a loopback address (checked at every request, so a store reopened
under a server bound to another interface answers nobody). Once a key has been made the
store is *guarded* for good: revoking every key leaves it guarded, and only the operator
reopens it (:func:`reopen`, ``memstrata keys reopen``).
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import logging
import secrets
from collections.abc import Mapping, Sequence

from memstrata.errors import InvalidInputError, MemstrataError
from memstrata.store import Store
from memstrata.store.base import WOULD_WAIT, ApiKey, check_namespace

SCOPES = ("read", "write", "admin")
PREFIX = "msk_"
logger = logging.getLogger("memstrata.service")


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


def live(store: Store) -> list[ApiKey]:
    """The keys not revoked."""
    return [k for k in store.api_keys() if k.revoked_at is None]


def guarded(store: Store) -> bool:
    """Whether requests need a key: the store has had one and was not reopened since."""
    return store.keys_guarded()


def reopen(store: Store) -> int:
    """The operator's explicit act of opening a store whose keys are all revoked: the
    service then answers without a key again (on loopback only). Refused while a key is
    live; logged. The number of revoked keys that stop guarding it."""
    still = live(store)
    if still:
        raise InvalidInputError(
            f"{len(still)} key(s) still live ({', '.join(k.id for k in still[:5])}); revoke "
            "them first: a store with a live key is never open"
        )
    lifted = store.lift_key_guard()
    logger.warning(
        "the store was reopened: %d revoked key(s) no longer guard it; the service answers "
        "without a key, on a loopback address only",
        lifted,
    )
    return lifted


def loopback(host: str) -> bool:
    """Whether ``host`` (a bind address or a host name) is this machine's loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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


async def check(
    store: Store, headers: Mapping[str, str], scope: str, *, bound_to_loopback: bool = True
) -> ApiKey | None:
    """The key the request carries; None while the store is open (never guarded, or
    reopened) and the server listens on loopback only. ``Unauthorized`` without a valid
    live key, ``Forbidden`` when its scope is short. The store is read at once when it
    can answer without waiting, off the event loop otherwise."""
    text = presented(headers.get("authorization"), headers.get("x-api-key"))
    found = store.read_at_once(lambda: _decide(store, text, scope, bound_to_loopback))
    if found is WOULD_WAIT:
        return await asyncio.to_thread(_decide, store, text, scope, bound_to_loopback)
    return found


async def is_open(store: Store) -> bool:
    """Whether the store answers without a key (read as :func:`check` reads)."""
    found = store.read_at_once(lambda: not guarded(store))
    if found is WOULD_WAIT:
        return not await asyncio.to_thread(guarded, store)
    return bool(found)


def _decide(store: Store, text: str | None, scope: str, bound_to_loopback: bool) -> ApiKey | None:
    key = store.api_key(digest(text)) if text else None
    if key is not None and key.revoked_at is None:  # one read on the usual path
        if not key.allows(scope):
            raise Forbidden(f"this key's scope is {key.scope!r}; this needs {scope!r}")
        return key
    if guarded(store):
        raise Unauthorized("a valid API key is required (Authorization: Bearer KEY)")
    if not bound_to_loopback:
        raise Unauthorized(
            "the store has no live API key and this server listens beyond loopback, so it "
            "answers no one: create a key (`memstrata keys create`) or serve on 127.0.0.1"
        )
    return None
