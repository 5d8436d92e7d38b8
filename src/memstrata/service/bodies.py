"""The request bodies of the REST routes, strict: an unknown field is an error, counts are
JSON integers and times ISO 8601 text, so that what a client sends is read one way only."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
)

from memstrata.ingest import ID_PATTERN
from memstrata.models import EpisodeIn, Moment
from memstrata.service.limits import MAX_EPISODES, MAX_K, MAX_QUERIES
from memstrata.store import SearchFilters
from memstrata.store.names import NAMESPACE_PATTERN

#: a number where a time is due: pydantic would read it as Unix seconds
_NUMBER = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")


def _iso(value: Any) -> Any:
    """A time is ISO 8601 text (or a datetime): a number, or digits in a string, is
    refused rather than read as seconds since 1970."""
    if isinstance(value, datetime) or (isinstance(value, str) and not _NUMBER.fullmatch(value)):
        return value
    raise ValueError("expected an ISO 8601 time such as 2024-03-02T10:21:00")


#: a time in a body or a query: ISO 8601 only
IsoTime = Annotated[Moment, BeforeValidator(_iso)]


def _integral(value: Any) -> Any:
    """A count is a JSON integer: ``5`` or ``5.0`` (the same number to JSON Schema), not
    ``true``, ``"5"`` or ``5.5``."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("expected an integer")
    return value


#: counts in a body: integers, checked strictly (see :func:`_integral`); the bounds come
#: before the check so that the schema shows them
K = Annotated[int, Field(ge=1, le=MAX_K), BeforeValidator(_integral)]
Budget = Annotated[int, Field(ge=-1), BeforeValidator(_integral)]
#: text that must say something: one character that is neither white space nor a
#: control character, as the core's own check (``str.strip``) reads it
SAYS = r"[^\s\x1c-\x1f]"
#: a text that says something (a query, a question, an episode's text)
Said = Annotated[StrictStr, Field(pattern=SAYS)]


class EpisodeBody(EpisodeIn):
    """One episode to remember; ``id`` makes the add idempotent. An unknown field is an
    error, not dropped."""

    model_config = ConfigDict(extra="forbid")

    text: Said
    id: Annotated[StrictStr, Field(pattern=ID_PATTERN)] | None = None
    occurred_at: IsoTime | None = None


class AddBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    episodes: list[EpisodeBody] = Field(min_length=1, max_length=MAX_EPISODES)
    replace: StrictBool = Field(
        default=False, description="replace ids stored with other content (kept in history)"
    )


class UpdateBody(BaseModel):
    """New text, and any context to change: a field left out keeps its stored value,
    null clears it (``metadata`` replaces the whole mapping)."""

    model_config = ConfigDict(extra="forbid")

    text: Said
    speaker: StrictStr | None = None
    role: StrictStr | None = None
    occurred_at: IsoTime | None = None
    session: StrictStr | None = None
    metadata: dict[str, Any] | None = None
    keep_history: StrictBool = Field(
        default=True, description="false: erase the replaced text and earlier versions"
    )


class FiltersBody(BaseModel):
    """Restrictions applied inside every route before ranking (an unknown key is an
    error, not ignored)."""

    model_config = ConfigDict(extra="forbid")

    speakers: list[StrictStr] | None = None
    sessions: list[StrictStr] | None = None
    since: IsoTime | None = None
    until: IsoTime | None = None

    def filters(self) -> SearchFilters:
        return SearchFilters(**self.model_dump())


class _Reading(BaseModel):
    """What a search and an ask share: how many hits, with which recipe, filtered how,
    fitted to which budget. Types are strict: ``"5"`` or ``true`` is not a ``k``."""

    model_config = ConfigDict(extra="forbid")

    k: K | None = None
    recipe: StrictStr | None = None
    filters: FiltersBody | None = None
    max_tokens: Budget | None = Field(
        default=-1, description="the context's token budget: -1 the configured, null none"
    )
    adaptive: StrictBool = Field(
        default=False, description="cut to as many source turns as the evidence needs (<= k)"
    )

    def options(self) -> dict[str, Any]:
        """The keywords of ``AsyncMemory.search`` these fields stand for."""
        where = None if self.filters is None else self.filters.filters()
        return dict(
            k=self.k,
            recipe=self.recipe,
            filters=where,
            max_tokens=self.max_tokens,
            adaptive=self.adaptive,
        )


class SearchBody(_Reading):
    query: Said


class SearchManyBody(_Reading):
    queries: list[Said] = Field(min_length=1, max_length=MAX_QUERIES)


class AskBody(_Reading):
    question: Said


#: what a key may name: a namespace, or "*" for all of them
KEY_NAMESPACE = rf"{NAMESPACE_PATTERN}|^\*$"


class KeyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespaces: list[Annotated[StrictStr, Field(pattern=KEY_NAMESPACE)]] = Field(
        min_length=1, description='namespaces it reaches; "*": all'
    )
    scope: Literal["read", "write", "admin"] = "read"
    label: str | None = None


class BuildBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recipe: StrictStr | None = None
    tier: StrictStr | None = None
    rebuild: StrictBool = Field(default=False, description="process every episode again")


class RetryBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    builder: StrictStr | None = Field(default=None, description="one builder's only")


__all__ = [
    "SAYS",
    "AddBody",
    "AskBody",
    "BuildBody",
    "EpisodeBody",
    "FiltersBody",
    "IsoTime",
    "KeyBody",
    "RetryBody",
    "SearchBody",
    "SearchManyBody",
    "UpdateBody",
]
