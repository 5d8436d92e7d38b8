"""API keys: made once and shown once, kept as their SHA-256, checked per request.

A key names the namespaces it reaches (``*``: all) and a scope: ``read`` (search, ask,
get, stats), ``write`` (also add, update, delete, build) or ``admin`` (also manage keys
for the namespaces it reaches). To a key, a namespace it does not reach does not exist.

A store that has never had a key is *open*: the service answers without one, and only
while it listens on a loopback address (checked at every request, so a store reopened
under a server bound to another interface answers nobody). Once a key has been made the
store is *guarded* for good: revoking every key leaves it guarded, and only the operator
reopens it (:func:`reopen`, ``memstrata keys reopen``).

The rules live here, beside the store's key table, so that the service reaches keys
through :attr:`AsyncMemory.keys <memstrata.memory.AsyncMemory.keys>` (:class:`Keys`)
rather than through the store; reading HTTP headers stays in :mod:`memstrata.service.keys`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
from collections.abc import Callable, Sequence
from typing import TypeVar

from memstrata.errors import InvalidInputError, MemstrataError
from memstrata.store import Store
from memstrata.store.base import WOULD_WAIT, ApiKey, check_namespace

SCOPES = ("read", "write", "admin")
PREFIX = "msk_"
logger = logging.getLogger("memstrata.service")
T = TypeVar("T")


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


class Unauthorized(MemstrataError):
    """No live key, or one that is not valid (HTTP 401)."""


class Forbidden(MemstrataError):
    """A valid key whose scope is short (HTTP 403)."""


class Keys:
    """The API keys of one store, read and written off the caller's event loop: what a
    service needs to check a request's key and to manage keys, without the store."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def check(
        self, text: str | None, scope: str, *, bound_to_loopback: bool = True
    ) -> ApiKey | None:
        """The key whose text is ``text``; None while the store is open (never guarded,
        or reopened) and the server listens on loopback only. :class:`Unauthorized`
        without a valid live key, :class:`Forbidden` when its scope is short."""
        return await self._read(lambda: _decide(self._store, text, scope, bound_to_loopback))

    async def is_open(self) -> bool:
        """Whether the store answers without a key (read as :meth:`check` reads)."""
        return not await self.guarded()

    async def guarded(self) -> bool:
        """Whether requests need a key; a read of the store, so it also says the store
        answers (it raises :class:`~memstrata.errors.StoreError` when it does not)."""
        return await self._read(lambda: guarded(self._store))

    async def create(
        self, namespaces: Sequence[str], scope: str, label: str | None = None
    ) -> tuple[str, ApiKey]:
        """A new key's text (shown this once) and its stored record (:func:`make_key`)."""
        return await asyncio.to_thread(make_key, self._store, namespaces, scope, label)

    async def revoke(self, key_id: str) -> bool:
        """Revoke the key with this id (``key_...``); whether there was one to revoke."""
        return await asyncio.to_thread(self._store.revoke_api_key, key_id)

    # last: below it, ``list`` names this method, not the type
    async def list(self) -> list[ApiKey]:
        """Every key made, revoked ones included (never their text)."""
        return await asyncio.to_thread(self._store.api_keys)

    async def _read(self, read: Callable[[], T]) -> T:
        """``read()`` at once when the store can answer without waiting (a key check is
        a few microseconds, which a thread hop would multiply), off the loop otherwise."""
        found = self._store.read_at_once(read)
        if found is WOULD_WAIT:
            return await asyncio.to_thread(read)
        return found


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


__all__ = [
    "PREFIX",
    "SCOPES",
    "Forbidden",
    "Keys",
    "Unauthorized",
    "digest",
    "guarded",
    "live",
    "make_key",
    "reopen",
]
