"""What the store reports about itself and the service: namespace statistics, build
failures, jobs, API keys, its search indexes, and what a removal left to repair (kept
apart from :mod:`.base` so that module stays readable; :mod:`.base` re-exports them)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import BaseModel, Field

from memstrata.models import Derived, JSONDict


class ApiKey(BaseModel):
    """An API key of the service, as stored: never the key itself, only its prefix."""

    id: str = Field(description="its public id (random: `key_` and 24 hex digits)")
    prefix: str
    namespaces: list[str] = Field(description='the namespaces it reaches; ["*"]: all')
    scope: Literal["read", "write", "admin"]
    label: str | None = None
    created_at: str
    revoked_at: str | None = None

    #: the columns :meth:`from_row` reads, in its order (both stores' ``api_keys`` table)
    COLUMNS: ClassVar[str] = "public_id, prefix, namespaces, scope, label, created_at, revoked_at"

    @staticmethod
    def new_id() -> str:
        """A fresh public id: random, so an id says nothing of how many keys there are
        and none can be guessed from another."""
        return "key_" + secrets.token_hex(12)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> ApiKey:
        """A key from a row of :attr:`COLUMNS` (``namespaces`` stored as a JSON list)."""
        return cls(
            id=row[0],
            prefix=row[1],
            namespaces=json.loads(row[2]),
            scope=row[3],
            label=row[4],
            created_at=row[5],
            revoked_at=row[6],
        )

    def reaches(self, namespace: str) -> bool:
        return "*" in self.namespaces or namespace in self.namespaces

    def allows(self, scope: str) -> bool:
        """read < write < admin: each scope includes the ones before it."""
        order = ("read", "write", "admin")
        return order.index(self.scope) >= order.index(scope)

    def whole_store(self) -> bool:
        """An admin key of every namespace: the store's operator, who may see where the
        store lives and how large it is."""
        return self.scope == "admin" and "*" in self.namespaces


class NamespaceStats(BaseModel):
    namespace: str
    episodes: int
    records: dict[str, int] = Field(default_factory=dict, description="records per kind")
    records_by_builder: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="per builder (the design that owns them): per kind"
    )
    embedded: int = 0
    builds: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="per builder: episodes done, failed (to be retried) and dead (gave up)",
    )
    repairs: dict[str, int] = Field(
        default_factory=dict,
        description="per builder: removals whose aggregates are not re-derived yet",
    )


class BuildFailure(NamedTuple):
    """An episode a builder could not fold in, and why."""

    episode: str
    builder: str
    status: str  # "failed": retried after retry_at; "dead": attempts used up
    attempts: int
    error: str
    retry_at: float | None


class JobRecord(BaseModel):
    """A job as the store sees it: what it covers, and the marks of its episodes now.

    ``marks`` counts, per builder of the job, its episodes (those still stored) by mark:
    ``done``, ``failed`` (to be tried again at ``next_retry_at``) and ``dead`` (attempts
    used up); episodes without a mark are still queued."""

    id: str
    namespace: str
    kind: str
    recipe: str
    builders: list[str]
    episodes: int = Field(description="episodes covered when the job was made")
    present: int = Field(description="of them, still stored")
    created_at: str
    marks: dict[str, dict[str, int]] = Field(default_factory=dict)
    next_retry_at: float | None = None
    failures: list[BuildFailure] = Field(default_factory=list)


class EpisodeVersion(BaseModel):
    """A version of an episode that an update replaced (the current one is the episode)."""

    id: str
    namespace: str
    version: int = Field(description="1 is the version first stored; the current one is next")
    text: str
    speaker: str | None = None
    role: str | None = None
    occurred_at: datetime | None = None
    session: str | None = None
    metadata: JSONDict = Field(default_factory=dict)
    written_at: datetime = Field(description="when this version was stored")
    replaced_at: datetime = Field(description="when an update replaced it")


#: the columns of ``episode_versions`` (aliased ``v``) :func:`version_of` reads after the
#: episode's external id, in both stores
VERSION_COLS = (
    "v.version, v.text, v.speaker, v.role, v.occurred_at, v.session, v.metadata, "
    "v.written_at, v.replaced_at"
)


def version_of(namespace: str, r: Sequence[Any]) -> EpisodeVersion:
    """A history row: the episode's external id, then :data:`VERSION_COLS`."""
    return EpisodeVersion(
        id=r[0],
        namespace=namespace,
        version=r[1],
        text=r[2],
        speaker=r[3],
        role=r[4],
        occurred_at=r[5],
        session=r[6],
        metadata=json.loads(r[7]) if r[7] else {},
        written_at=r[8],
        replaced_at=r[9],
    )


#: ``content_hash`` of the row an update without history leaves: no text, only a newer
#: version id (other connections' indexes watch it); ``episode_history`` skips it
DROPPED_HASH = b""


class RemovedEpisode(BaseModel):
    """An episode a delete or an update took from the structures: its id, the text that
    went (what quoted it), where it sat, and whether it is gone (False: replaced)."""

    id: str
    text: str = Field(default="", description="the text removed (kept until repaired)")
    speaker: str | None = None
    session: str | None = None
    seq: int = 0
    key: int = 0
    deleted: bool = True


class Repairs(BaseModel):
    """One builder's share of what deletes and updates removed, to re-derive from.

    ``episodes``: the removed episodes; ``changed``: ids of the builder's records that
    lost sources or links but still exist; ``dropped``: the builder's records that the
    removal took along (their last state, e.g. a tree leaf with its parent). ``ids``
    are the log entries, cleared with :meth:`Store.clear_repairs` once repaired."""

    episodes: list[RemovedEpisode] = Field(default_factory=list)
    changed: dict[str, str] = Field(default_factory=dict, description="record id -> kind")
    dropped: list[Derived] = Field(default_factory=list)
    ids: list[int] = Field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.ids)


class IndexReport(BaseModel):
    """What :meth:`SearchIndexes.build_indexes` did for one namespace."""

    vectors: int = Field(default=0, description="vectors in its graph (0: searched exactly)")
    documents: int = Field(
        default=0, description="documents in its full-text index (0: FTS5 answers)"
    )
    built: list[str] = Field(default_factory=list, description="indexes written now")
    failed: list[str] = Field(default_factory=list, description="indexes whose build failed")
    abandoned: bool = Field(default=False, description="stopped by a stop request")


class SearchIndexes:
    """A store's search indexes of large namespaces. The SQLite store keeps a vector graph
    and a full-text index beside its file for namespaces past a size
    (``store/sqlite_indexes.py``); PostgreSQL's are kept by the database itself, so these
    defaults do nothing."""

    def build_indexes(
        self,
        namespace: str,
        model: str,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> IndexReport:
        """Write the namespace's search indexes that are missing or behind and wait for
        them (``memstrata build``, the worker); ``progress(index, done, total)``."""
        return IndexReport()

    def indexes_due(self, namespace: str, model: str) -> list[str]:
        """The indexes :meth:`build_indexes` would write now: without them a search of
        the namespace reads every vector, or every posting of its terms."""
        return []

    def abandon_builds(self) -> None:
        """Stop this store's running index builds and wait until they have stopped."""
        return None
