"""A namespace as rows no backend owns: what ``memstrata copy`` moves between stores.

Every store numbers episodes with keys of its own, so nothing here holds one: provenance,
build marks, job members and history rows name their episode by external id, and
:meth:`Store.import_namespace` maps them to the keys the target gives. Rows come in the
order the source wrote them (episodes by key, records, versions and repairs by their
ids), so the target writes them in that order too and insertion order survives. Values are
the stored ones, as text where the store keeps text (timestamps, metadata and record JSON
are not parsed and dumped again), so a copy is exact.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from memstrata.errors import StoreError
from memstrata.store.base import RemovedEpisode


@dataclass(slots=True)
class EpisodeRow:
    external_id: str
    text: str
    speaker: str | None
    role: str | None
    occurred_at: str | None
    occurred_ts: float | None
    session: str | None
    seq: int
    metadata: str | None  # the stored JSON text, None for no metadata
    content_hash: bytes
    embed_hash: bytes | None
    created_at: str
    index_text: str = ""  # the full-text body; filled by the copier (not stored by every backend)


@dataclass(slots=True)
class VersionRow:
    """A version an update replaced (``episode``: the external id of its episode)."""

    episode: str
    version: int
    text: str
    speaker: str | None
    role: str | None
    occurred_at: str | None
    session: str | None
    metadata: str | None
    content_hash: bytes
    embed_hash: bytes | None
    written_at: str
    replaced_at: str


@dataclass(slots=True)
class RecordRow:
    id: str
    kind: str
    builder: str
    data: str  # the record's JSON as stored
    created_at: str
    updated_at: str


@dataclass(slots=True)
class MarkRow:
    """A build mark: done, failed (retried at ``retry_at``) or dead."""

    builder: str
    episode: str
    status: str
    updated_at: str
    attempts: int
    error: str | None
    retry_at: float | None


@dataclass(slots=True)
class RepairRow:
    """A repair-log entry. For ``what == "episode"`` the data's ``key`` is 0 in a dump;
    the import puts the target's key there when the episode is still stored."""

    builder: str
    what: str
    ref: str
    data: str | None
    created_at: str


@dataclass(slots=True)
class JobRow:
    id: str
    kind: str
    recipe: str
    builders: str  # JSON list, as stored
    episodes: int
    created_at: str
    created_ts: float
    members: list[str] = field(default_factory=list)  # external ids still stored


@dataclass(slots=True)
class CallRow:
    """One LLM call of the accounting (every column but the id)."""

    namespace: str | None
    stage: str
    backend: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    cached: int
    ok: int
    error: str | None
    attempts: int
    request_hash: str
    created_at: str
    outcome: str
    truncated: int
    rejected: int
    dropped: str | None
    reasoning_tokens: int = 0


@dataclass(slots=True)
class KeyRow:
    """An API key as stored: its SHA-256 digest, never the key."""

    hash: str
    prefix: str
    namespaces: str  # JSON list, as stored
    scope: str
    label: str | None
    created_at: str
    revoked_at: str | None
    public_id: str
    opened_at: str | None  # NULL while it guards the store


@dataclass(slots=True)
class NamespaceDump:
    """Everything of one namespace. Leases are left out: they name live processes of the
    source and mean nothing to the target."""

    name: str
    created_at: str
    episodes: list[EpisodeRow] = field(default_factory=list)
    versions: list[VersionRow] = field(default_factory=list)
    records: list[RecordRow] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (parent id, child id)
    provenance: list[tuple[str, str, int, int]] = field(default_factory=list)
    marks: list[MarkRow] = field(default_factory=list)
    repairs: list[RepairRow] = field(default_factory=list)
    jobs: list[JobRow] = field(default_factory=list)
    calls: list[CallRow] = field(default_factory=list)

    def counts(self) -> dict[str, Any]:
        """What ``copy --verify`` compares: rows per table, records per builder and kind,
        marks per builder and status."""
        records = Counter(f"{r.builder or '(unowned)'}/{r.kind}" for r in self.records)
        marks = Counter(f"{m.builder}/{m.status}" for m in self.marks)
        return {
            "episodes": len(self.episodes),
            "versions": len(self.versions),
            "records": dict(sorted(records.items())),
            "category links": len(self.links),
            "provenance": len(self.provenance),
            "marks": dict(sorted(marks.items())),
            "repairs": len(self.repairs),
            "jobs": len(self.jobs),
            "job episodes": sum(len(j.members) for j in self.jobs),
            "llm calls": len(self.calls),
        }


@dataclass(slots=True)
class GlobalDump:
    """What belongs to no namespace: API keys, and LLM calls that name no namespace of
    the store (none, or one deleted since)."""

    keys: list[KeyRow] = field(default_factory=list)
    calls: list[CallRow] = field(default_factory=list)


def values(row: Any) -> tuple[Any, ...]:
    """A dump row's values in field order (every row is a slotted dataclass)."""
    return tuple(getattr(row, name) for name in row.__slots__)


def key_of(keys: dict[str, int], external_id: str) -> int:
    """The target's key of an episode the dump names."""
    try:
        return keys[external_id]
    except KeyError:
        raise StoreError(
            f"the dump names episode {external_id!r}, which it does not hold"
        ) from None


def neutral_repair(what: str, data: str | None) -> str | None:
    """A repair entry's data without the source's episode key (0 in its place)."""
    if what != "episode" or data is None:
        return data
    return RemovedEpisode.model_validate_json(data).model_copy(update={"key": 0}).model_dump_json()


def keyed_repair(what: str, data: str | None, keys: dict[str, int]) -> str | None:
    """A dump's repair data with the target's key of its episode, when that episode is
    still stored (replaced, not deleted); a deleted one keeps 0."""
    if what != "episode" or data is None:
        return data
    gone = RemovedEpisode.model_validate_json(data)
    if gone.deleted or gone.id not in keys:
        return data
    return gone.model_copy(update={"key": keys[gone.id]}).model_dump_json()
