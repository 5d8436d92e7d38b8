"""What the four memory classes share: how ids are read, and the page ``list`` returns.

``Memory``, ``AsyncMemory``, ``RemoteMemory`` and ``AsyncRemoteMemory`` take the same
arguments (tests/test_one_api.py compares them); the rules that must not differ between
them live here, once.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from memstrata.errors import InvalidInputError
from memstrata.models import Episode

#: what a verb that takes ids accepts: one id as a string, or any iterable of them
EpisodeIds = str | Iterable[str]

#: the most episodes one page of ``list`` holds
MAX_PAGE = 1000


def episode_ids(ids: EpisodeIds) -> list[str]:
    """``ids`` as a list: a bare string is one id, never the letters of one (``"12"`` is
    the id 12, not 1 and 2). Anything else must be an iterable of strings; raises
    :class:`TypeError` naming what it got otherwise."""
    if isinstance(ids, str):
        return [ids]
    if ids is None:
        raise TypeError(
            "ids are needed: one id (a string) or several (a list); to delete a whole "
            "namespace, call delete_namespace(namespace)"
        )
    if isinstance(ids, bytes | bytearray) or not isinstance(ids, Iterable):
        raise TypeError(
            f"ids are one id (a string) or an iterable of strings, not {type(ids).__name__}"
        )
    out = list(ids)
    for item in out:
        one_id(item)
    return out


def one_id(id: str) -> str:
    """``id`` if it is a string (an episode id); :class:`TypeError` otherwise."""
    if not isinstance(id, str):
        raise TypeError(f"an episode id is a string, not {type(id).__name__} {id!r}")
    return id


def check_page(limit: int, after: str | None) -> None:
    """A page's size and cursor as ``list`` takes them; :class:`InvalidInputError`
    otherwise (the cursor's content is checked where it is read)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError(f"limit must be from 1 to {MAX_PAGE}, got {limit!r}")
    if after is not None and not isinstance(after, str):
        raise InvalidInputError(f"after is the cursor text a page gave, not {after!r}")


class EpisodePage(BaseModel):
    """One page of :meth:`~memstrata.AsyncMemory.list`: episodes in the order they were
    added, and the cursor of the next page."""

    episodes: list[Episode]
    next: str | None = Field(
        default=None,
        description="pass as `after` for the next page; null on the last. Opaque: it names "
        "a place in this namespace only, and reveals nothing of the store",
    )
