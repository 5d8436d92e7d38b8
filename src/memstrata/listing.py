"""Reading episodes by id and a page at a time (a mixin of :class:`~memstrata.AsyncMemory`).

``list`` walks a namespace in insertion order, which is the order of the store's episode
key: a counter shared by every namespace of the store. Handing that key out as the
cursor would tell a tenant how many episodes other tenants wrote between two of its own
(the gaps), so the cursor is the key *sealed*:

* encrypted, so that it shows nothing: a random 12-byte nonce, and the key's 8 bytes
  XORed with HMAC-SHA256(secret, "pad" | nonce), a pseudorandom pad never used twice;
* authenticated, so that it cannot be forged or moved: HMAC-SHA256(secret, "tag" |
  nonce | sealed key | namespace), 16 bytes of it. A changed byte, a made-up cursor or
  one from another namespace fails the check and is an :class:`InvalidInputError` (a 400
  over REST), never a position read from the caller's digits.

The secret is 32 random bytes kept in the store (:meth:`Store.secret`), so every process
and server on the store reads the others' cursors, and a new store invalidates old ones.
HMAC-SHA256 in place of a block cipher because the standard library has it (no new
dependency) and encrypt-then-MAC over a one-time pad is a textbook construction. An
offset would be simpler but shifts when earlier episodes are deleted; the key does not.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import os
from typing import TYPE_CHECKING

from memstrata.errors import InvalidInputError
from memstrata.models import Episode
from memstrata.store import SearchFilters
from memstrata.verbs import EpisodeIds, EpisodePage, check_page, episode_ids

if TYPE_CHECKING:
    from memstrata.store import Store

#: the name of the store's secret that seals cursors
SECRET = "list-cursor"
_NONCE, _KEY, _TAG = 12, 8, 16
#: episodes read from the store per step while a filtered page fills
_READ = 200


def seal(secret: bytes, namespace: str, key: int) -> str:
    """A cursor for the position ``key`` in ``namespace``: URL-safe text of 48 characters,
    different each time for the same position."""
    nonce = os.urandom(_NONCE)
    sealed = _xor(key.to_bytes(_KEY, "big"), _mac(secret, b"pad", nonce)[:_KEY])
    tag = _mac(secret, b"tag", nonce + sealed + namespace.encode("utf-8"))[:_TAG]
    return base64.urlsafe_b64encode(nonce + sealed + tag).decode("ascii")


def unseal(secret: bytes, namespace: str, cursor: str) -> int:
    """The position a cursor of :func:`seal` names in ``namespace``; an
    :class:`InvalidInputError` for anything else."""
    try:
        raw = base64.b64decode(cursor.encode("ascii"), altchars=b"-_", validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        raw = b""
    if len(raw) == _NONCE + _KEY + _TAG:
        nonce, sealed, tag = raw[:_NONCE], raw[_NONCE:-_TAG], raw[-_TAG:]
        expected = _mac(secret, b"tag", nonce + sealed + namespace.encode("utf-8"))[:_TAG]
        if hmac.compare_digest(tag, expected):
            return int.from_bytes(_xor(sealed, _mac(secret, b"pad", nonce)[:_KEY]), "big")
    raise InvalidInputError(
        f"{cursor[:60]!r} is not a list cursor of namespace {namespace!r}: pass the `next` "
        "of the previous page unchanged (or nothing, for the first page)"
    )


def _mac(secret: bytes, label: bytes, data: bytes) -> bytes:
    return hmac.new(secret, label + data, hashlib.sha256).digest()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def read_page(
    store: Store,
    namespace: str,
    after: str | None,
    limit: int,
    where: SearchFilters | None,
) -> EpisodePage:
    """Up to ``limit`` admitted episodes after the cursor ``after``, and the next cursor
    (None once the namespace is read to its end). A filtered page reads on until it is
    full or the namespace ends; its cursor is the last episode read, admitted or not."""
    secret = store.secret(SECRET)
    position = 0 if after is None else unseal(secret, namespace, after)
    found: list[Episode] = []
    step = max(limit, _READ)
    while True:
        batch = store.iter_episodes(namespace, after_key=position, limit=step)
        for episode in batch:
            position = episode.key
            if where is None or where.is_empty() or where.admits(episode):
                found.append(episode)
                if len(found) == limit:
                    return EpisodePage(episodes=found, next=seal(secret, namespace, position))
        if len(batch) < step:
            return EpisodePage(episodes=found, next=None)


class EpisodeReader:
    """Mixin of :class:`~memstrata.memory.AsyncMemory`: ``get`` and ``list``."""

    if TYPE_CHECKING:
        store: Store

        def _ns(self, namespace: str | None) -> str: ...
        async def _known(self, namespace: str) -> str: ...

    async def get(self, ids: EpisodeIds, *, namespace: str | None = None) -> list[Episode]:
        """The stored episodes with these ids, in the order given (ids not stored are left
        out). A bare string is one id."""
        wanted = episode_ids(ids)
        return await asyncio.to_thread(self.store.get_episodes, self._ns(namespace), wanted)

    async def list(
        self,
        *,
        namespace: str | None = None,
        after: str | None = None,
        limit: int = 100,
        filters: SearchFilters | None = None,
    ) -> EpisodePage:
        """A page of the namespace's episodes in the order they were added, optionally
        filtered (speakers, sessions, a time window). ``after`` is the ``next`` of the
        previous page: an opaque cursor, good for this namespace only (module docstring).
        Last in the class: below it, ``list`` names this verb, not the type."""
        check_page(limit, after)
        ns = await self._known(self._ns(namespace))
        return await asyncio.to_thread(read_page, self.store, ns, after, limit, filters)
