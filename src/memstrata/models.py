"""Typed records of memstrata.

Every record belongs to a namespace. Episodes are the raw input, changed only by an
explicit update that keeps the old version in their history; everything
else is *derived* and points back to episodes through :class:`Span` provenance, so that
any hit can be traced to source text and deleting an episode removes what rested on it.

Two kinds are shared by several designs and live here: :class:`Entity` and :class:`Fact`
(a graph's nodes and its edges with a validity window). Every other kind is declared by
the design that builds it, in its own package (``records.py``), with
:func:`register_kind`; the stores and the engine read any kind through
:func:`record_kind` and name none. A record class states what the integrity checks need
to know of it (``links``, ``parent_field``, :meth:`Derived.natural_keys`, ...) so that
they too work for a kind they have never heard of.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

JSONDict = dict[str, Any]
D = TypeVar("D", bound="Derived")


def new_id() -> str:
    """Random, sortable-enough identifier for derived records."""
    return uuid.uuid4().hex


class Span(BaseModel):
    """A character range ``[start, end)`` of one episode's text, by the episode's external id."""

    model_config = ConfigDict(frozen=True)

    episode: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Span:
        if self.end < self.start:
            raise ValueError(f"span end {self.end} is before start {self.start}")
        return self


def _representable(value: datetime) -> datetime:
    """A time whose offset takes its UTC instant before year 1 or past year 9999
    (``0001-01-01T00:00+05:00``) cannot be compared or turned back into a date by the
    routes that read times: refused where it comes in."""
    if value.tzinfo is not None:
        try:
            value.astimezone(UTC)
        except (OverflowError, ValueError):
            raise ValueError(
                f"time {value.isoformat()} is out of range: in UTC it falls outside the "
                "years 1 to 9999"
            ) from None
    return value


#: a point in time that every part of memstrata can place (see :func:`_representable`)
Moment = Annotated[datetime, AfterValidator(_representable)]


def aware(moment: datetime) -> datetime:
    """``moment`` with its offset; a naive time is UTC, as the stores keep it. Two turn
    times are compared through this: one may be naive (an import's ``at``) and the other
    aware (a stored time, the clock)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


EPISODE_KEYS = ("id", "text", "speaker", "role", "at", "occurred_at", "session", "metadata")
"""The keys an episode given as a mapping may hold, to ``add_many`` or in a JSONL import
line alike. ``at`` is the import files' name for ``occurred_at``."""


class EpisodeIn(BaseModel):
    """What a caller gives to ``add``: text plus optional context."""

    text: str
    id: str | None = None
    speaker: str | None = None
    role: str | None = None
    occurred_at: Moment | None = None
    session: str | None = None
    metadata: JSONDict = Field(default_factory=dict)


class Episode(BaseModel):
    """A stored piece of raw text: a conversation turn, a message or a document chunk."""

    id: str
    namespace: str
    text: str
    speaker: str | None = None
    role: str | None = None
    occurred_at: datetime | None = None
    session: str | None = None
    seq: int = 0
    key: int = Field(default=0, description="the store's internal key, stable within a store")
    metadata: JSONDict = Field(default_factory=dict)
    created_at: datetime


class Derived(BaseModel):
    """Base of every record built from episodes; ``sources`` is its provenance."""

    kind: ClassVar[str] = ""
    id: str = Field(default_factory=new_id)
    namespace: str
    builder: str = Field(
        default="",
        description="the builder (of a design) that wrote it and owns it; set by the store",
    )
    sources: list[Span] = Field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None

    #: the fields that name other records or episodes, each with the kinds it may name
    #: ("a|b", or "episode"): the integrity checks follow them
    links: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: a field naming the record above (a tree's ``parent_id``): a record then also rests
    #: on the records beneath it, not only on its own sources
    parent_field: ClassVar[str | None] = None
    #: a many-to-many ``(children, parents)`` pair of list fields the store keeps in a
    #: link table and in step when a linked record goes (a hierarchy's categories)
    link_fields: ClassVar[tuple[str, str] | None] = None

    def search_text(self) -> str:
        """What text search (BM25 and embeddings) sees of the record."""
        return ""

    def is_root(self) -> bool:
        """A record that may rest on nothing (an empty tree's root)."""
        return False

    @classmethod
    def natural_keys(cls, records: Sequence[Derived]) -> Iterable[tuple[str, Any]]:
        """``(name, key)`` for each of ``records`` of this kind (one builder's, all
        kinds given for lookups): two records of a sound build never share a key."""
        return ()


class Entity(Derived):
    """A person, place, object, event or concept (Mnemis entity / PersonalAI object node)."""

    kind: ClassVar[str] = "entity"
    name: str
    aliases: list[str] = Field(default_factory=list, description="other names merged into it")
    summary: str = ""
    tags: list[str] = Field(default_factory=list)
    entity_type: str | None = None

    def search_text(self) -> str:
        return f"{self.name}: {self.summary}" if self.summary else self.name

    @classmethod
    def natural_keys(cls, records: Sequence[Derived]) -> Iterable[tuple[str, Any]]:
        return (("entity", r.name.casefold()) for r in records if isinstance(r, cls))


class Fact(Derived):
    """A verifiable statement linking two entities, valid in ``[valid_at, invalid_at)``.

    Superseded facts keep their row and get ``invalid_at`` so history stays queryable.
    """

    kind: ClassVar[str] = "fact"
    subject_id: str
    object_id: str
    relation: str = ""
    fact: str
    entity_ids: list[str] = Field(
        default_factory=list, description="every entity the fact mentions, subject first"
    )
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    replaced_by: list[str] = Field(
        default_factory=list, description="ids of the records that superseded it"
    )

    links: ClassVar[tuple[tuple[str, str], ...]] = (
        ("subject_id", "entity"),
        ("object_id", "entity"),
        ("entity_ids", "entity"),
        ("replaced_by", "fact"),
    )

    def search_text(self) -> str:
        return self.fact

    @classmethod
    def natural_keys(cls, records: Sequence[Derived]) -> Iterable[tuple[str, Any]]:
        names = {r.id: r.name.casefold() for r in records if isinstance(r, Entity)}
        for r in records:
            if isinstance(r, cls):
                ends = (names.get(r.subject_id, r.subject_id), names.get(r.object_id, r.object_id))
                cited = tuple(sorted({s.episode for s in r.sources}))
                yield "fact", (ends, r.relation, r.fact.casefold(), cited)


#: every record kind known in this process, by name: the core's, and each design's once
#: its package is imported (see :func:`record_kind`)
DERIVED_KINDS: dict[str, type[Derived]] = {}


def register_kind(cls: type[D]) -> type[D]:
    """Declare a record kind (a class decorator): the stores read records of that kind
    back as this class. A design declares its own kinds in its package; two classes may
    not claim one name."""
    if not cls.kind:
        raise TypeError(f"{cls.__name__} has no kind")
    known = DERIVED_KINDS.get(cls.kind)
    if known is not None and known is not cls:
        raise TypeError(f"record kind {cls.kind!r} is {known.__qualname__} already")
    DERIVED_KINDS[cls.kind] = cls
    return cls


#: what declares the kinds not known yet: the engine's registry, which loads the designs
#: (the core names no layer above it; importing :mod:`memstrata` installs the registry)
_KIND_SOURCES: list[Callable[[], object]] = []


def find_kinds_with(source: Callable[[], object]) -> None:
    """Have :func:`load_kinds` call ``source`` (once per process is the source's own
    business), which registers the kinds of whatever it loads."""
    if source not in _KIND_SOURCES:
        _KIND_SOURCES.append(source)


def load_kinds() -> dict[str, type[Derived]]:
    """Every kind, the designs' included: the kind sources (the registry: the built-in
    designs and the installed design plug-ins) register their kinds as they load."""
    for source in _KIND_SOURCES:
        source()
    return DERIVED_KINDS


def record_kind(kind: str) -> type[Derived] | None:
    """The class of a kind's records (loading the designs on the first unknown name);
    None if no design declares it."""
    return DERIVED_KINDS.get(kind) or load_kinds().get(kind)


register_kind(Entity)
register_kind(Fact)


class Moved(BaseModel):
    """A ranking rule that moved a hit: its name, and the relative change of the hit's
    score at the step the rule applied (+0.5: half as much again; -0.1: a tenth less)."""

    rule: str
    effect: float


class Why(BaseModel):
    """Why a search found a hit (:mod:`memstrata.retrieval.relevance`)."""

    fused: float = Field(
        default=0.0,
        description="the recipe's fused score (weighted reciprocal ranks): what orders the "
        "hits of a kind in one result, meaningless across queries",
    )
    similarity: float | None = Field(
        default=None,
        description="cosine of the query and the hit (an episode's stored vector; a "
        "record's own, or its best source turn's)",
    )
    terms: list[str] = Field(
        default_factory=list, description="the query's search terms the hit's text holds"
    )
    lists: dict[str, int] = Field(
        default_factory=dict,
        description="its rank (from 1) in each candidate list of its route that held it "
        "(System-1: dense, bm25, voice, period-dense, period-bm25, session)",
    )
    moved: list[Moved] = Field(
        default_factory=list, description="the ranking rules that raised or lowered it"
    )


class Hit(BaseModel):
    """One retrieved item: what it is, its text, its score and the episodes it rests on.

    In a search's result ``score`` is the hit's relevance to the query, 0..1, on one
    scale for every query (:func:`memstrata.retrieval.relevance.score`); the hits come
    in the recipe's ranking order, which ``why.fused`` and ``ranks`` explain. Inside a
    route, before fusion, ``score`` is the route's own."""

    kind: str
    id: str
    text: str
    score: float
    sources: list[str]
    spans: list[Span] = Field(default_factory=list)
    routes: list[str] = Field(default_factory=list)
    ranks: dict[str, int] = Field(
        default_factory=dict, description="route of the recipe -> its rank there (from 1)"
    )
    metadata: JSONDict = Field(default_factory=dict)
    why: Why | None = Field(default=None, description="why the search found it")


class SearchResult(BaseModel):
    """Hits for one query, the context they render to, and its size in tokens."""

    query: str
    namespace: str
    hits: list[Hit]
    context: str = ""
    context_tokens: int = 0
    pending: int = Field(default=0, description="episodes the recipe has not folded in yet")
    timings_ms: dict[str, float] = Field(default_factory=dict)
