"""The store interface every backend implements (SQLite embedded, PostgreSQL).

SQL never leaves the store package: callers speak in records, filters and vectors; the
conformance tests (``tests/store``) run on every backend. Methods are synchronous (the
async API runs them in worker threads).
"""

from __future__ import annotations

import json
import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, TypeVar

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, Field

from memstrata.models import Derived, Episode, JSONDict, Moment, aware
from memstrata.store.erasing import StoreErasure
from memstrata.store.key_tables import KeyTables
from memstrata.store.names import check_namespace as check_namespace  # where it was
from memstrata.store.reports import DROPPED_HASH as DROPPED_HASH
from memstrata.store.reports import (  # ApiKey: re-exported
    ApiKey,  # noqa: F401
    BuildFailure,
    JobRecord,
    NamespaceStats,
    Repairs,
    SearchIndexes,
)
from memstrata.store.reports import EpisodeVersion as EpisodeVersion
from memstrata.store.reports import RemovedEpisode as RemovedEpisode

T = TypeVar("T")


class WouldWait(Enum):
    """The answer of :meth:`Store.read_at_once` when the read would have to wait."""

    WOULD_WAIT = "would wait"


WOULD_WAIT: Final[Literal[WouldWait.WOULD_WAIT]] = WouldWait.WOULD_WAIT

if TYPE_CHECKING:
    from memstrata.llm.types import LLMCallRecord
    from memstrata.store.dump import GlobalDump, NamespaceDump


class PreparedEpisode(BaseModel):
    """An episode ready to be written: validated text plus what the indexes need."""

    external_id: str
    text: str
    speaker: str | None = None
    role: str | None = None
    occurred_at: datetime | None = None
    session: str | None = None
    metadata: JSONDict = Field(default_factory=dict)
    content_hash: bytes
    index_text: str
    embed_hash: bytes | None = None


class AddReport(BaseModel):
    """What a batch write did, per id.

    ``existing``: already stored with the same content (text, speaker, role, occurred_at,
    session and metadata), left as it was: re-running an import is a no-op. ``conflicts``:
    already stored with different content and left unchanged. ``updated``: stored with
    different content and replaced, the old version kept in the history (only when the
    caller asked to replace).
    """

    added: list[str] = Field(default_factory=list)
    existing: list[str] = Field(default_factory=list)
    conflicts: list[str] = Field(default_factory=list)
    updated: list[str] = Field(default_factory=list)


class UpdateReport(BaseModel):
    """What replacing episodes did: ids given a new version, ids whose stored content was
    already the same (no new version), ids not stored (nothing written)."""

    updated: list[str] = Field(default_factory=list)
    unchanged: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)


class DeleteReport(int):
    """The number of episodes a delete removed (it *is* that int, so ``== 2`` works), and
    ``missing``: the given ids that were not stored."""

    missing: list[str]

    def __new__(cls, deleted: int, missing: Sequence[str] = ()) -> DeleteReport:
        report = super().__new__(cls, deleted)
        report.missing = list(missing)
        return report

    def __repr__(self) -> str:
        return f"DeleteReport({int(self)}, missing={self.missing!r})"


def same_episode(new: PreparedEpisode, old: Episode) -> bool:
    """Whether writing ``new`` over the stored ``old`` would change nothing: same text
    (hence content hash), speaker, role, session, instant and metadata (as JSON)."""
    return (
        new.text == old.text
        and (new.speaker, new.role, new.session) == (old.speaker, old.role, old.session)
        and _same_instant(new.occurred_at, old.occurred_at)
        and _as_json(new.metadata) == _as_json(old.metadata)
    )


def _same_instant(a: datetime | None, b: datetime | None) -> bool:
    if a is None or b is None:
        return a is b
    if (a.tzinfo is None) != (b.tzinfo is None):
        return False
    return a == b


def _as_json(value: JSONDict) -> Any:
    return json.loads(json.dumps(value or {}, ensure_ascii=False, sort_keys=True))


class SearchFilters(BaseModel):
    """Restrictions applied inside every route before ranking."""

    speakers: list[str] | None = None
    sessions: list[str] | None = None
    since: Moment | None = None
    until: Moment | None = None

    def is_empty(self) -> bool:
        return not (self.speakers or self.sessions or self.since or self.until)

    def within(self, since: datetime, until: datetime) -> SearchFilters:
        """These filters, with their time window narrowed to ``[since, until]``."""
        lo = max(aware(since), aware(self.since)) if self.since else since
        hi = min(aware(until), aware(self.until)) if self.until else until
        return self.model_copy(update={"since": lo, "until": hi})

    def admits(self, episode: Episode) -> bool:
        """Whether ``episode`` passes, for routes that filter outside the store (naive
        times count as UTC, as the store's timestamps do)."""
        if self.speakers and episode.speaker not in self.speakers:
            return False
        if self.sessions and episode.session not in self.sessions:
            return False
        when = episode.occurred_at
        if when is None:
            return not (self.since or self.until)
        when = aware(when)
        if self.since and when < aware(self.since):
            return False
        return not (self.until and when > aware(self.until))


class EpisodeMeta(NamedTuple):
    """The few columns ranking needs, without the text (cheap to fetch for many)."""

    key: int
    session: str | None
    seq: int
    speaker: str | None
    occurred_ts: float | None


class EpisodeText(NamedTuple):
    """What ranking rules read of hundreds of candidates a search (no whole episodes)."""

    key: int
    text: str
    speaker: str | None
    role: str | None
    session: str | None
    seq: int


ScoredKeys = list[tuple[int, float]]


class Store(KeyTables, SearchIndexes, StoreErasure, ABC):
    """Persistent memory of every namespace."""

    url: str

    @abstractmethod
    def schema_version(self) -> int:
        """Version of the schema the store is at (migrations applied)."""

    def secret(self, name: str) -> bytes:
        """32 random bytes made the first time ``name`` is asked for and kept in the store
        (its ``memstrata_meta`` table): the same in every process that opens it, whichever
        wrote it first. For what memstrata seals for its callers (the list cursor); never
        part of any output."""
        key = f"secret:{name}"
        found = self._meta(key) or self._meta(key, secrets.token_hex(32))
        assert found is not None
        return bytes.fromhex(found)

    @abstractmethod
    def _meta(self, key: str, default: str | None = None) -> str | None:
        """The value under ``key`` in ``memstrata_meta``; given a ``default``, it is
        stored first unless a value is there already (one transaction)."""

    # namespaces -------------------------------------------------------------------------
    @abstractmethod
    def namespaces(self) -> list[str]: ...

    @abstractmethod
    def has_namespace(self, namespace: str) -> bool: ...

    @abstractmethod
    def delete_namespace(self, namespace: str) -> int:
        """Remove the namespace and everything in it; returns the episodes removed."""

    # episodes ---------------------------------------------------------------------------
    @abstractmethod
    def add_episodes(self, namespace: str, episodes: Sequence[PreparedEpisode]) -> AddReport:
        """Write a batch atomically. Ids already present are left untouched and reported."""

    @abstractmethod
    def existing_ids(self, namespace: str, external_ids: Sequence[str]) -> set[str]: ...

    @abstractmethod
    def get_episodes(self, namespace: str, external_ids: Sequence[str]) -> list[Episode]: ...

    @abstractmethod
    def episodes_by_key(self, keys: Sequence[int]) -> dict[int, Episode]: ...

    @abstractmethod
    def episode_meta(self, keys: Sequence[int]) -> dict[int, EpisodeMeta]: ...

    def episode_texts(self, keys: Sequence[int]) -> dict[int, EpisodeText]:
        """The stored ones of ``keys``; a backend reads only these columns."""
        got = self.episodes_by_key(keys).items()
        return {k: EpisodeText(k, e.text, e.speaker, e.role, e.session, e.seq) for k, e in got}

    @abstractmethod
    def iter_episodes(self, namespace: str, after_key: int = 0, limit: int = 1000) -> list[Episode]:
        """Episodes in insertion order, for builders and exports."""

    def all_episodes(self, namespace: str) -> list[Episode]:
        """Every episode of the namespace, in insertion order (read in pages)."""
        out: list[Episode] = []
        while page := self.iter_episodes(namespace, after_key=out[-1].key if out else 0):
            out += page
        return out

    @abstractmethod
    def session_neighbours(self, keys: Sequence[int], window: int) -> dict[int, list[int]]:
        """For each episode key, the keys of up to ``window`` turns before and after it in
        the same session (in order, the episode itself excluded)."""

    @abstractmethod
    def session_after(self, namespace: str, session: str, seq: int, limit: int) -> list[Episode]:
        """Up to ``limit`` episodes of ``session`` that come after position ``seq``, in
        order (the position may be one a deleted episode held)."""

    @abstractmethod
    def speakers(self, namespace: str) -> list[str]:
        """Distinct speakers of the namespace, most frequent first."""

    @abstractmethod
    def delete_episodes(self, namespace: str, external_ids: Sequence[str]) -> DeleteReport:
        """Delete episodes and, along provenance, derived records left without sources.
        Returns how many were deleted, with the ids that were not stored."""

    @abstractmethod
    def update_episodes(
        self, namespace: str, episodes: Sequence[PreparedEpisode], *, keep_history: bool = True
    ) -> UpdateReport:
        """Replace stored episodes by id, in one transaction with what follows from it.

        For every episode whose stored content differs (:func:`same_episode`): the stored
        version goes into the history, the episode takes the new text, context, index
        text and ``embed_hash`` (key, ``seq`` and ``created_at`` stay), derived records
        lose their provenance on it (records left without sources are deleted, as in
        :meth:`delete_episodes`) and every builder's mark on it is removed, so each
        builder's queue holds it again. Ids not stored are reported, not added.
        ``keep_history=False`` erases the replaced text and earlier versions as a delete
        does, leaving one ``DROPPED_HASH`` row."""

    @abstractmethod
    def episode_history(self, namespace: str, external_id: str) -> list[EpisodeVersion]:
        """The versions updates replaced, oldest first (empty if never updated or not
        stored)."""

    # embeddings -------------------------------------------------------------------------
    @abstractmethod
    def cached_embeddings(
        self, model: str, hashes: Sequence[bytes]
    ) -> dict[bytes, NDArray[np.float32]]: ...

    @abstractmethod
    def put_embeddings(
        self,
        model: str,
        items: Sequence[tuple[bytes, NDArray[np.float32]]],
        words: Mapping[bytes, Collection[int]] | None = None,
        namespace: str | None = None,
    ) -> None:
        """Keep the vectors (the first one stored for a hash wins). With ``words``, file
        each under its text's word keys and ``namespace`` (None: no namespace's), so a
        delete finds it (:meth:`forget_embeddings`)."""

    # retrieval primitives ---------------------------------------------------------------
    @abstractmethod
    def bm25_episodes(
        self, namespace: str, terms: Sequence[str], limit: int, filters: SearchFilters | None = None
    ) -> ScoredKeys:
        """Episodes matching any of ``terms``, best BM25 first; scores are positive."""

    @abstractmethod
    def doc_freqs(self, namespace: str, words: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The namespace's number of episodes and, per word, how many of them hold it, as
        BM25 indexes the word (stemmed; a word of several tokens counts by its rarest)."""

    @abstractmethod
    def dense_episodes(
        self,
        namespace: str,
        model: str,
        queries: NDArray[np.float32],
        limit: int,
        filters: SearchFilters | None = None,
    ) -> list[ScoredKeys]:
        """For each query vector, episodes by cosine similarity, best first."""

    # derived records --------------------------------------------------------------------
    # Every derived record belongs to the builder that wrote it (``Derived.builder``):
    # designs share a store, not records. Writes name their owner, reads name the builder
    # whose records they want (None: every builder's, for inspection), and a builder can
    # neither replace nor delete another's record.
    @abstractmethod
    def put_records(self, namespace: str, records: Sequence[Derived], *, owner: str) -> None:
        """Insert or replace ``owner``'s derived records with their provenance and links."""

    @abstractmethod
    def get_records(
        self,
        namespace: str,
        kind: str,
        ids: Sequence[str] | None = None,
        *,
        builder: str | None,
    ) -> list[Derived]:
        """Records of ``kind`` written by ``builder`` (None: by any builder), each with
        its ``builder`` set."""

    @abstractmethod
    def write_records(
        self,
        namespace: str,
        put: Sequence[Derived],
        delete: Sequence[str] = (),
        built: tuple[str, Sequence[int]] | None = None,
        *,
        owner: str | None = None,
    ) -> None:
        """One transaction: delete records by id, insert or replace others, and mark
        episode keys as done by a builder, so a killed build never half-applies a step.

        ``owner`` (default: the builder of ``built``) is the builder the records belong
        to: every record put is stamped with it, and putting or deleting an id that
        another builder owns is refused with a :class:`StoreError`."""

    @abstractmethod
    def built_keys(self, namespace: str, builder: str) -> set[int]:
        """Episode keys a builder has finished (its resumable progress)."""

    @abstractmethod
    def reset_build(self, namespace: str, builder: str) -> None:
        """Forget a builder's progress and drop every record it owns (full rebuild);
        other builders' records and marks stay as they are."""

    @abstractmethod
    def forget_builds(self, namespace: str, builder: str, episode_ids: Sequence[str]) -> None:
        """Remove ``builder``'s marks on these episodes (by external id), so its queue
        holds them again: a design re-deriving what rested on a removed episode folds
        the episodes that shared a dropped aggregate in again."""

    # repairs ----------------------------------------------------------------------------
    # Deleting or replacing episodes logs, in the same transaction, what each builder lost
    # (see Repairs); the builder re-derives its aggregates from it and clears the entries.
    @abstractmethod
    def pending_repairs(self, namespace: str, builder: str, limit: int = 10_000) -> Repairs:
        """The oldest ``limit`` log entries of ``builder`` in the namespace."""

    @abstractmethod
    def clear_repairs(self, namespace: str, ids: Sequence[int]) -> None:
        """Remove log entries once their builder has repaired what they name."""

    @abstractmethod
    def repair_backlog(self, namespace: str) -> dict[str, int]:
        """Log entries waiting, per builder (empty when every repair is done)."""

    @abstractmethod
    def unowned_records(self) -> dict[str, dict[str, int]]:
        """Records written before records named their builder: namespace -> kind -> count."""

    @abstractmethod
    def adopt_records(self, namespace: str, kind: str, builder: str | None) -> int:
        """Give the namespace's unowned records of ``kind`` to ``builder`` (None: delete
        them, for a rebuild); how many."""

    # the build queue ----------------------------------------------------------------
    # Pending work is every (episode, builder) pair without a done mark: the queue is
    # derived from committed episodes, so it survives any crash and cannot drift from them.
    @abstractmethod
    def pending_episodes(
        self,
        namespace: str,
        builder: str,
        limit: int = 1000,
        after_key: int = 0,
        now: float | None = None,
    ) -> list[Episode]:
        """Episodes ``builder`` has not folded in, in insertion order: no mark yet, or a
        failed mark whose retry time has come (``now``, epoch seconds). Dead ones are left
        out until :meth:`retry_failed`."""

    @abstractmethod
    def pending_count(self, namespace: str, builder: str) -> int:
        """Episodes without a done mark of ``builder`` (failed and dead ones included)."""

    @abstractmethod
    def unbuilt(
        self, namespace: str, builders: Sequence[str], external_ids: Sequence[str]
    ) -> list[str]:
        """The ids among ``external_ids`` that some of ``builders`` has not marked done
        (queued, failed or dead): what their structures do not show yet."""

    @abstractmethod
    def mark_failed(
        self,
        namespace: str,
        builder: str,
        failures: Sequence[tuple[int, str]],
        max_attempts: int,
        backoff_s: float,
    ) -> None:
        """Record failed attempts (episode key, error). The next try waits
        ``backoff_s * 2**(attempts-1)``; at ``max_attempts`` the mark becomes dead."""

    @abstractmethod
    def retry_failed(self, namespace: str, builder: str | None = None) -> int:
        """Make failed and dead marks retryable now, attempts reset; returns how many."""

    @abstractmethod
    def build_failures(
        self, namespace: str, builder: str | None = None, limit: int = 50
    ) -> list[BuildFailure]: ...

    @abstractmethod
    def acquire_lease(self, namespace: str, builder: str, owner: str, ttl_s: float) -> bool:
        """Take or renew the build lease of (namespace, builder) for ``owner``; True if
        ``owner`` holds it now. An expired lease, or one held by a process of this host
        that no longer runs, is taken over. ``owner`` is ``host:pid:token``."""

    @abstractmethod
    def release_lease(self, namespace: str, builder: str, owner: str) -> None: ...

    @abstractmethod
    def lease_holder(self, namespace: str, builder: str) -> str | None:
        """The owner of a live lease, or None."""

    @abstractmethod
    def records_stamp(self, namespace: str) -> tuple[int, str]:
        """(count, last update) of the namespace's derived records: cheap change detection
        for in-memory indexes over them."""

    # jobs of the service ----------------------------------------------------------------
    @abstractmethod
    def add_job(
        self,
        namespace: str,
        job_id: str,
        kind: str,
        recipe: str,
        builders: Sequence[str],
        external_ids: Sequence[str],
        keep_s: float = 7 * 86_400,
    ) -> int:
        """Record a job over the namespace's episodes of these ids (absent ones are left
        out); how many it covers. Jobs older than ``keep_s`` are forgotten."""

    @abstractmethod
    def job(self, job_id: str) -> JobRecord | None:
        """The job and the marks of its episodes now, or None (unknown, forgotten, or its
        namespace deleted)."""

    # API keys of the service: the abstract part is KeyTables (key_tables.py) -------------
    def read_at_once(self, read: Callable[[], T]) -> T | WouldWait:
        """``read()`` on the caller's thread if that cannot wait (on a lock or the
        network); ``WOULD_WAIT`` otherwise, and the caller runs it off its event loop.
        A request's key check is a few microseconds of reading, which a thread hop
        would multiply; a store that can never promise it answers WOULD_WAIT."""
        return WOULD_WAIT

    # accounting and stats ---------------------------------------------------------------
    @abstractmethod
    def record_llm_call(self, record: LLMCallRecord) -> None: ...

    @abstractmethod
    def llm_usage(self, namespace: str | None = None) -> dict[str, dict[str, Any]]:
        """Per stage: calls, failures, cached, prompt/completion tokens, latency."""

    @abstractmethod
    def stats(self, namespace: str | None = None) -> list[NamespaceStats]: ...

    @abstractmethod
    def size_bytes(self) -> int: ...

    # moving a store (memstrata copy) --------------------------------------------------------
    # A namespace travels as a NamespaceDump: rows in the source's order, episodes named by
    # external id (keys are each store's own). The import is one transaction.
    @abstractmethod
    def export_namespace(self, namespace: str) -> NamespaceDump:
        """Everything of the namespace (raises :class:`StoreError` if there is none)."""

    @abstractmethod
    def import_namespace(self, dump: NamespaceDump) -> None:
        """Write a namespace from a dump, all or nothing: new keys in the dump's order,
        ``seq``, timestamps, hashes, marks and logs as they were. A namespace of that name
        already here is refused with a :class:`StoreError` and nothing is written."""

    @abstractmethod
    def export_globals(self) -> GlobalDump:
        """API keys (with their digests) and LLM calls of no current namespace."""

    @abstractmethod
    def import_globals(self, dump: GlobalDump) -> tuple[int, int]:
        """Add the keys whose digest is not here and the calls not here already (same
        namespace, stage, request hash and time); (keys, calls) added. Safe to repeat."""

    @abstractmethod
    def iter_embeddings(
        self, after: tuple[str, bytes] | None = None, limit: int = 1000
    ) -> list[tuple[str, bytes, NDArray[np.float32]]]:
        """The embedding cache in (model, hash) order, from after ``after``: (model, hash,
        vector) as the store keeps it (float16 values, as float32)."""

    @abstractmethod
    def close(self) -> None: ...
