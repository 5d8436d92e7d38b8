"""API keys as HTTP carries them: the key a request presents, and whether an address is
loopback. What keys are and how they are checked is :mod:`memstrata.keyring` (the service
reaches it through ``AsyncMemory.keys``); its names are re-exported here for the CLI and
for code that checks a raw store's keys."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from memstrata.keyring import (
    PREFIX,
    SCOPES,
    Forbidden,
    Keys,
    Unauthorized,
    digest,
    guarded,
    live,
    make_key,
    reopen,
)
from memstrata.store import Store
from memstrata.store.base import ApiKey


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


def carried(headers: Mapping[str, str]) -> str | None:
    """The key in a request's headers (:func:`presented`)."""
    return presented(headers.get("authorization"), headers.get("x-api-key"))


async def check(
    store: Store, headers: Mapping[str, str], scope: str, *, bound_to_loopback: bool = True
) -> ApiKey | None:
    """The key the request carries, checked against ``store`` (:meth:`Keys.check`)."""
    return await Keys(store).check(carried(headers), scope, bound_to_loopback=bound_to_loopback)


async def is_open(store: Store) -> bool:
    """Whether ``store`` answers without a key (:meth:`Keys.is_open`)."""
    return await Keys(store).is_open()


__all__ = [
    "PREFIX",
    "SCOPES",
    "Forbidden",
    "Unauthorized",
    "carried",
    "check",
    "digest",
    "guarded",
    "is_open",
    "live",
    "loopback",
    "make_key",
    "presented",
    "reopen",
]
