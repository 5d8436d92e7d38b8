"""Typed records of memstrata.

Every record belongs to a namespace. Episodes are the raw input, changed only by an
explicit update that keeps the old version in their history; everything
else is *derived* and points back to episodes through :class:`Span` provenance, so that
any hit can be traced to source text and deleting an episode removes what rested on it.

The derived records cover the five structures memstrata builds:

* Mnemis: :class:`Entity`, :class:`Fact` (edges with a validity window), :class:`Category`
  (layered, many-to-many parents).
* PersonalAI: :class:`Entity` (object nodes), :class:`Fact` (simple relations),
  :class:`Thesis` (propositions linking several entities).
* HiGMem: :class:`TurnNote` (a turn's analysed metadata, one per turn) and :class:`Event`
  (a summary and a fact sheet over several turns).
* MemTree: :class:`TreeNode`.
* MindGraph: :class:`ConceptNode`, :class:`ConceptEdge`, :class:`Community`.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

JSONDict = dict[str, Any]


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


EPISODE_KEYS = ("id", "text", "speaker", "role", "at", "occurred_at", "session", "metadata")
"""The keys an episode given as a mapping may hold, to ``add_many`` or in a JSONL import
line alike. ``at`` is the import files' name for ``occurred_at``."""


class EpisodeIn(BaseModel):
    """What a caller gives to ``add``: text plus optional context."""

    text: str
    id: str | None = None
    speaker: str | None = None
    role: str | None = None
    occurred_at: datetime | None = None
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

    def search_text(self) -> str:
        """What text search (BM25 and embeddings) sees of the record."""
        return ""


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

    def search_text(self) -> str:
        return self.fact


class Thesis(Derived):
    """A proposition over several entities (PersonalAI thesis node, a hyperedge).

    Like a fact, a superseded thesis keeps its row, with ``invalid_at`` and its successors.
    """

    kind: ClassVar[str] = "thesis"
    text: str
    entity_ids: list[str] = Field(default_factory=list)
    invalid_at: datetime | None = None
    replaced_by: list[str] = Field(default_factory=list)

    def search_text(self) -> str:
        return self.text


class Category(Derived):
    """A node of the category hierarchy. Layer 1 groups entities; layer i groups layer i-1.

    ``parent_ids`` is many-to-many: a child may sit under several categories.
    """

    kind: ClassVar[str] = "category"
    name: str
    layer: int = Field(ge=1)
    summary: str = Field(default="", description="what its members share, like an entity's")
    tags: list[str] = Field(default_factory=list)
    child_ids: list[str] = Field(default_factory=list)
    parent_ids: list[str] = Field(default_factory=list)

    def search_text(self) -> str:
        if self.summary:
            return f"{self.name}: {self.summary}"
        return f"{self.name}: {', '.join(self.tags)}" if self.tags else self.name


class EventFact(BaseModel):
    """One line of an event's fact sheet: a short fact, when it happened if known, and
    the turns (episode ids) it came from."""

    text: str
    when: str | None = None
    turns: list[str] = Field(default_factory=list)


class Event(Derived):
    """A HiGMem event: a summary and a fact sheet (a timeline) over the turns it links.

    ``turn_ids`` are the linked turns in the order they joined; ``sources`` holds one span
    per linked turn, so a deleted turn drops out of the event's provenance. A fact given
    as a plain string is read as a fact without date or links.
    """

    kind: ClassVar[str] = "event"
    summary: str
    facts: list[EventFact] = Field(default_factory=list)
    turn_ids: list[str] = Field(default_factory=list)

    @field_validator("facts", mode="before")
    @classmethod
    def _plain_facts(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"text": v} if isinstance(v, str) else v for v in value]
        return value

    def search_text(self) -> str:
        return self.summary


class TurnNote(Derived):
    """A HiGMem turn node's metadata, derived from one turn (its only source) read in the
    window of the turns before it: the episode itself is never changed.

    ``dates`` are the relative or absolute date phrases of the turn resolved against the
    turn's time (``{"phrase": ..., "date": "YYYY-MM-DD"}``); ``timestamp`` is the turn's
    own time (ISO), or the date the turn is about when the analysis says so.
    """

    kind: ClassVar[str] = "turn_note"
    turn_id: str
    keywords: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    context: str = ""
    timestamp: str | None = None
    dates: list[dict[str, str]] = Field(default_factory=list)

    def search_text(self) -> str:
        parts = [", ".join(self.keywords), self.context]
        return " | ".join(p for p in parts if p)


class TreeNode(Derived):
    """A MemTree node: aggregated content at a depth, with its parent (None for the root)."""

    kind: ClassVar[str] = "tree_node"
    parent_id: str | None = None
    depth: int = Field(default=0, ge=0)
    content: str = ""

    def search_text(self) -> str:
        return self.content


class ConceptNode(Derived):
    """A MindGraph concept; its sources are the spans of the verbatim quotes it came from.

    ``label`` is the node's readable id within its graph, ``description`` its content;
    ``graph`` names the graph it belongs to ("" for a namespace's own graph)."""

    kind: ClassVar[str] = "concept_node"
    label: str
    description: str = ""
    node_type: str = "concept"
    chunk: int = 0
    graph: str = ""

    def search_text(self) -> str:
        return f"{self.label}: {self.description}" if self.description else self.label


class ConceptEdge(Derived):
    """A typed relation between two concept nodes, with its own provenance."""

    kind: ClassVar[str] = "concept_edge"
    source_id: str
    target_id: str
    relation: str = ""
    chunk: int = 0
    graph: str = ""

    def search_text(self) -> str:
        return self.relation


class Community(Derived):
    """A group of concept nodes (Leiden community) and its cached report."""

    kind: ClassVar[str] = "community"
    level: int = 0
    member_ids: list[str] = Field(default_factory=list)
    report: str = ""
    graph: str = Field(default="", description="hash of the graph it was computed for")
    title: str = ""
    rating: float = 0.0
    findings: list[str] = Field(default_factory=list)

    def search_text(self) -> str:
        return self.report


DERIVED_KINDS: dict[str, type[Derived]] = {
    cls.kind: cls
    for cls in (
        Entity,
        Fact,
        Thesis,
        Category,
        Event,
        TurnNote,
        TreeNode,
        ConceptNode,
        ConceptEdge,
        Community,
    )
}

HitKind = Literal[
    "episode",
    "entity",
    "fact",
    "thesis",
    "category",
    "event",
    "turn_note",
    "tree_node",
    "concept_node",
    "community",
]


class Hit(BaseModel):
    """One retrieved item: what it is, its text, its score and the episodes it rests on."""

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


class SearchResult(BaseModel):
    """Hits for one query, the context they render to, and its size in tokens."""

    query: str
    namespace: str
    hits: list[Hit]
    context: str = ""
    context_tokens: int = 0
    pending: int = Field(default=0, description="episodes the recipe has not folded in yet")
    timings_ms: dict[str, float] = Field(default_factory=dict)
