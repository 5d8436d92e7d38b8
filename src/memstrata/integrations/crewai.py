"""CrewAI's memory storage, kept in memstrata.

:class:`MemstrataStorage` is a storage backend of CrewAI's unified ``Memory``
(``crewai.memory.storage.backend.StorageBackend``, the protocol CrewAI's LanceDB and
Qdrant stores implement): a crew's memories are memstrata episodes, and its recalls are
memstrata searches::

    from crewai import Crew
    from crewai.memory.unified_memory import Memory as CrewMemory
    from memstrata import Memory
    from memstrata.integrations.crewai import MemstrataStorage

    storage = MemstrataStorage(Memory.open("memory.db"))
    memory = CrewMemory(storage=storage, embedder=storage.embedder)
    crew = Crew(agents=..., tasks=..., memory=memory)

How the two models meet (docs/integrations.md):

* a CrewAI scope (``/user/ana``) is the memstrata namespace ``prefix + scope``
  (``crewai:/user/ana``), so each scope is a tenant of its own, and a scope prefix reads
  the namespaces under it;
* a ``MemoryRecord`` is an episode: its id the record's id, its text the record's
  content, its time the record's creation; categories,
  metadata, importance, times, source and privacy sit in the episode's metadata
  (``crewai``), so a record reads back as it was saved;
* CrewAI searches a store by the query's embedding; memstrata searches by text. The
  storage's :attr:`~MemstrataStorage.embedder` (memstrata's own MiniLM) remembers which
  text each vector it made came from, so a search by one of its vectors is the recipe's
  search by that text. Each record a search returns carries in
  ``metadata["memstrata"]`` the episodes its hit rests on, and its score is the hit's
  cosine similarity (what CrewAI's scoring weighs).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from crewai.memory.types import MemoryRecord, ScopeInfo

from memstrata.errors import InvalidInputError, NamespaceNotFoundError
from memstrata.integrations.bridge import Bridge, episodes
from memstrata.models import Episode, Hit
from memstrata.store.names import check_namespace

#: the key of an episode's metadata that holds what CrewAI keeps of a record
FIELD = "crewai"
#: the key of a found record's metadata that says where it comes from
SOURCE = "memstrata"
PAGE = 1000
#: the query texts the embedder remembers, newest kept
REMEMBERED = 4096


class Embedder:
    """CrewAI's embedder callable (texts to vectors) on memstrata's own model, which
    remembers the text of each vector it made, so the storage can search by text."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._texts: OrderedDict[bytes, str] = OrderedDict()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        vectors = np.asarray(self._model.embed(list(texts)), dtype=np.float32)
        for text, vector in zip(texts, vectors, strict=True):
            key = vector.tobytes()
            self._texts[key] = text
            self._texts.move_to_end(key)
        while len(self._texts) > REMEMBERED:
            self._texts.popitem(last=False)
        return [[float(x) for x in v] for v in vectors]

    def text_of(self, vector: Sequence[float]) -> str | None:
        """The text a vector was made from, if this embedder made it."""
        return self._texts.get(np.asarray(vector, dtype=np.float32).tobytes())


class MemstrataStorage:
    """A CrewAI memory storage backend over a memstrata client.

    ``memory`` is a ``Memory`` or ``RemoteMemory`` (CrewAI calls its storage from
    threads, synchronously) or an async client used from outside an event loop;
    ``prefix`` starts every namespace the storage uses; ``recipe`` is the memstrata
    recipe a search runs (None: the configured one); ``embedder`` a memstrata embedder
    for :attr:`embedder` (None: the client's own, or MiniLM for a service)."""

    def __init__(
        self,
        memory: Any,
        *,
        prefix: str = "crewai:",
        recipe: str | None = None,
        embedder: Any = None,
    ) -> None:
        self._bridge = Bridge(memory)
        self._client = self._bridge.client
        self.prefix = prefix
        self.recipe = recipe
        model = embedder if embedder is not None else getattr(self._client, "embedder", None)
        if model is None:
            from memstrata.embed import MiniLMEmbedder

            model = MiniLMEmbedder()
        #: the embedder to give CrewAI's ``Memory(embedder=...)``
        self.embedder = Embedder(model)

    def _run(self, coro: Any) -> Any:
        return self._bridge.run(coro, "MemstrataStorage")

    # names ------------------------------------------------------------------------------------
    def namespace(self, scope: str) -> str:
        """The memstrata namespace of a scope; InvalidInputError when memstrata cannot
        hold it."""
        return check_namespace(self.prefix + _scope(scope))

    async def _scopes(self, scope_prefix: str | None = None) -> list[str]:
        """Every scope held under a prefix (a prefix of the path's text, as CrewAI's
        stores match it), in name order."""
        wanted = _prefix(scope_prefix)
        names = sorted(await self._client.namespaces())
        scopes = [n[len(self.prefix) :] for n in names if n.startswith(self.prefix + "/")]
        return [s for s in scopes if s.startswith(wanted)]

    async def _episodes(self, scope: str) -> list[Episode]:
        return [e async for e in episodes(self._client, self.prefix + scope, page=PAGE)]

    async def _records(self, scope_prefix: str | None) -> list[MemoryRecord]:
        return [
            record_of(e, scope)
            for scope in await self._scopes(scope_prefix)
            for e in await self._episodes(scope)
        ]

    # writes -----------------------------------------------------------------------------------
    def save(self, records: list[MemoryRecord]) -> None:
        self._run(self._save(records))

    async def asave(self, records: list[MemoryRecord]) -> None:
        await self._bridge.arun(self._save(records))

    async def _save(self, records: list[MemoryRecord], replace: bool = False) -> None:
        by_scope: dict[str, list[dict[str, Any]]] = {}
        for record in records:  # every record checked before any is stored
            by_scope.setdefault(self.namespace(record.scope), []).append(episode_of(record))
        for name, items in by_scope.items():
            await self._client.add_many(items, namespace=name, replace=replace)

    def update(self, record: MemoryRecord) -> None:
        """Replaces the record with the same id (the old version stays in the episode's
        history), moving it when its scope changed."""
        self._run(self._update(record))

    async def _update(self, record: MemoryRecord) -> None:
        name = self.namespace(record.scope)
        episode_of(record)  # checked before anything changes
        held = await self._locate(record.id)
        if held is not None and held != name:
            await self._delete_ids(held, [record.id])
        await self._save([record], replace=True)

    async def _locate(self, record_id: str) -> str | None:
        for scope in await self._scopes():
            if await self._client.get([record_id], namespace=self.prefix + scope):
                return self.prefix + scope
        return None

    def delete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        return int(
            self._run(
                self._delete(scope_prefix, categories, record_ids, older_than, metadata_filter)
            )
        )

    async def adelete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        return int(
            await self._bridge.arun(
                self._delete(scope_prefix, categories, record_ids, older_than, metadata_filter)
            )
        )

    async def _delete(
        self,
        scope_prefix: str | None,
        categories: list[str] | None,
        record_ids: list[str] | None,
        older_than: datetime | None,
        metadata_filter: dict[str, Any] | None,
    ) -> int:
        """The records under the prefix that pass every criterion given, deleted with
        what was derived from them alone."""
        ids = set(record_ids) if record_ids else None
        removed = 0
        for scope in await self._scopes(scope_prefix):
            going = [
                r.id
                for r in map(lambda e: record_of(e, scope), await self._episodes(scope))
                if (ids is None or r.id in ids)
                and _passes(r, categories, metadata_filter)
                and (older_than is None or r.created_at < older_than)
            ]
            removed += await self._delete_ids(self.prefix + scope, going)
        return removed

    async def _delete_ids(self, name: str, ids: list[str]) -> int:
        if not ids:
            return 0
        removed = int(await self._client.delete(ids, namespace=name))
        # a scope lives while it holds a record, as in CrewAI's stores
        if not (await self._client.list(namespace=name, limit=1)).episodes:
            await self._client.delete_namespace(name)
        return removed

    def reset(self, scope_prefix: str | None = None) -> None:
        """Deletes the scope and those under it (every scope when None or ``/``)."""
        self._run(self._reset(scope_prefix))

    async def _reset(self, scope_prefix: str | None) -> None:
        top = _prefix(scope_prefix)
        for scope in await self._scopes():
            if not top or scope == top or scope.startswith(top + "/"):
                try:
                    await self._client.delete_namespace(self.prefix + scope)
                except NamespaceNotFoundError:
                    continue

    # reads ------------------------------------------------------------------------------------
    def search(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        query = self._query(query_embedding)
        found = self._search(query, scope_prefix, categories, metadata_filter, limit, min_score)
        return list(self._run(found))

    async def asearch(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        query = self._query(query_embedding)
        found = self._search(query, scope_prefix, categories, metadata_filter, limit, min_score)
        return list(await self._bridge.arun(found))

    def _query(self, vector: list[float]) -> str:
        text = self.embedder.text_of(vector)
        if text is None:
            raise InvalidInputError(
                "memstrata searches by text, and this vector was not made by the storage's "
                "embedder: give CrewAI's Memory(storage=storage, embedder=storage.embedder)"
            )
        return text

    async def _search(
        self,
        query: str,
        scope_prefix: str | None,
        categories: list[str] | None,
        metadata_filter: dict[str, Any] | None,
        limit: int,
        min_score: float,
    ) -> list[tuple[MemoryRecord, float]]:
        """The recipe's hits in each scope under the prefix, as records scored by their
        similarity to the query, best first; a filter is applied to the hits (more of
        them are read, as CrewAI's stores do)."""
        if limit <= 0 or not query.strip():
            return []
        want = limit * 3 if (categories or metadata_filter) else limit
        out: list[tuple[MemoryRecord, float]] = []
        for scope in await self._scopes(scope_prefix):
            name = self.prefix + scope
            try:
                found = await self._client.search(
                    query, namespace=name, k=want, recipe=self.recipe, max_tokens=None
                )
            except NamespaceNotFoundError:
                continue
            hits = found.hits[:want]
            ids = list(dict.fromkeys(s for h in hits for s in h.sources))
            held = {e.id: e for e in await self._client.get(ids, namespace=name)} if ids else {}
            taken: set[str] = set()
            for hit in hits:
                key = next((s for s in hit.sources if s in held and s not in taken), None)
                if key is None:
                    continue
                taken.add(key)
                record = found_record(held[key], scope, hit)
                score = similarity(hit)
                if _passes(record, categories, metadata_filter) and score >= min_score:
                    out.append((record, score))
        out.sort(key=lambda pair: -pair[1])  # stable: a scope's own order on ties
        return out[:limit]

    def get_record(self, record_id: str) -> MemoryRecord | None:
        return self._run(self._get_record(record_id))

    async def _get_record(self, record_id: str) -> MemoryRecord | None:
        for scope in await self._scopes():
            got = await self._client.get([record_id], namespace=self.prefix + scope)
            if got:
                return record_of(got[0], scope)
        return None

    def list_records(
        self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[MemoryRecord]:
        """The records under the prefix, newest first."""
        if limit <= 0 or offset < 0:
            return []
        records = self._run(self._records(scope_prefix))
        records.sort(key=lambda r: r.created_at, reverse=True)
        return records[offset : offset + limit]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        path = scope.rstrip("/") or "/"
        records = self._run(self._records(None if path == "/" else path))
        child = _prefix(path) + "/"
        children = {
            child + r.scope[len(child) :].split("/", 1)[0]
            for r in records
            if r.scope.startswith(child) and r.scope[len(child) :]
        }
        times = [r.created_at for r in records]
        return ScopeInfo(
            path=path,
            record_count=len(records),
            categories=sorted({c for r in records for c in r.categories}),
            oldest_record=min(times) if times else None,
            newest_record=max(times) if times else None,
            child_scopes=sorted(children),
        )

    def list_scopes(self, parent: str = "/") -> list[str]:
        """The scopes right under ``parent`` that hold records, or hold scopes that do."""
        child = _prefix(parent) + "/"
        scopes: list[str] = self._run(self._scopes(child))
        below = [s[len(child) :] for s in scopes if s.startswith(child) and s != child]
        return sorted({child + rest.split("/", 1)[0] for rest in below if rest})

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for record in self._run(self._records(scope_prefix)):
            for c in record.categories:
                counts[c] = counts.get(c, 0) + 1
        return counts

    def count(self, scope_prefix: str | None = None) -> int:
        return len(self._run(self._records(scope_prefix)))

    def close(self) -> None:
        """Nothing to release: the client stays open for its owner."""


# the record model -----------------------------------------------------------------------------
def episode_of(record: MemoryRecord) -> dict[str, Any]:
    """The episode a record is; a record whose metadata is not JSON is refused."""
    held = {
        "scope": _scope(record.scope),
        "categories": list(record.categories),
        "metadata": dict(record.metadata),
        "importance": record.importance,
        "created_at": record.created_at.isoformat(),
        "last_accessed": record.last_accessed.isoformat(),
        "source": record.source,
        "private": record.private,
    }
    try:
        json.dumps(held, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"record {record.id!r} holds metadata that is not JSON ({exc}); nothing was stored"
        ) from exc
    return {
        "id": record.id,
        "text": record.content,
        "occurred_at": record.created_at,
        "metadata": {FIELD: held},
    }


def record_of(episode: Episode, scope: str) -> MemoryRecord:
    """An episode as the record it was saved as; one written by other means as a record
    of its namespace's scope, created when it was added."""
    held = episode.metadata.get(FIELD)
    if not isinstance(held, dict):
        return MemoryRecord(
            id=episode.id,
            content=episode.text,
            scope=scope,
            created_at=episode.created_at,
            last_accessed=episode.created_at,
        )
    return MemoryRecord(
        id=episode.id,
        content=episode.text,
        scope=str(held.get("scope", scope)),
        categories=list(held.get("categories") or []),
        metadata=dict(held.get("metadata") or {}),
        importance=float(held.get("importance", 0.5)),
        created_at=datetime.fromisoformat(held["created_at"]),
        last_accessed=datetime.fromisoformat(held["last_accessed"]),
        source=held.get("source"),
        private=bool(held.get("private", False)),
    )


def found_record(episode: Episode, scope: str, hit: Hit) -> MemoryRecord:
    """A record a search found, naming in its metadata the hit and the episodes it rests
    on (CrewAI shows a record's metadata to the agent beside its content)."""
    record = record_of(episode, scope)
    source: dict[str, Any] = {"episode": episode.id, "sources": list(hit.sources)}
    if hit.kind != "episode":  # a derived record (a fact, a summary) that cites it
        source["hit"] = {"kind": hit.kind, "id": hit.id, "text": hit.text}
    return record.model_copy(update={"metadata": {**record.metadata, SOURCE: source}})


def similarity(hit: Hit) -> float:
    """The hit's cosine similarity to the query (what CrewAI's stores score and its
    recall weighs), or the recipe's score where the hit has none, within [0, 1]."""
    value = hit.why.similarity if hit.why is not None and hit.why.similarity is not None else None
    return min(1.0, max(0.0, float(hit.score if value is None else value)))


def _scope(scope: str) -> str:
    """A scope path as CrewAI writes it: from ``/``, without a trailing ``/``."""
    return "/" + scope.strip("/")


def _prefix(scope_prefix: str | None) -> str:
    """A scope prefix from ``/`` without its trailing ``/`` ("" for every scope)."""
    if scope_prefix is None or not scope_prefix.strip("/"):
        return ""
    return "/" + scope_prefix.strip("/")


def _passes(
    record: MemoryRecord, categories: list[str] | None, metadata_filter: dict[str, Any] | None
) -> bool:
    if categories and not any(c in record.categories for c in categories):
        return False
    return not metadata_filter or all(
        record.metadata.get(k) == v for k, v in metadata_filter.items()
    )


__all__ = ["Embedder", "MemstrataStorage"]
