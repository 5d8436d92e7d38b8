"""The Mnemis graph of one namespace, held in memory while it is built or searched.

Entities, facts and categories are records in the store; this class loads them once,
keeps the lookup tables de-duplication needs (case-folded names, name words, name
vectors), remembers what changed, and writes the changes back in one transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from memstrata.designs.mnemis.extract import name_key
from memstrata.designs.mnemis.records import Category
from memstrata.embed.base import Embedder
from memstrata.embed.cache import embed_cached
from memstrata.models import Derived, Entity, Fact, Span
from memstrata.retrieval.text import content_terms
from memstrata.store.base import Store

#: the builder that owns the records the ``mnemis`` recipes read and write
BUILDER = "mnemis"
#: the builder of ``mnemis-paper``: the paper's hierarchy rules, so records of its own
PAPER_BUILDER = "mnemis-paper"
SPEAKER_CATEGORY = "Speaker"


def fact_key(text: str) -> str:
    return " ".join(text.casefold().split())


class Graph:
    """Base graph plus hierarchy of one namespace, with change tracking."""

    def __init__(
        self, store: Store, embedder: Embedder, namespace: str, builder: str = BUILDER
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.namespace = namespace
        #: the builder owning the records: two builders keep two graphs apart
        self.builder = builder
        self.entities: dict[str, Entity] = {}
        self.facts: dict[str, Fact] = {}
        self.categories: dict[str, Category] = {}
        self.by_key: dict[str, str] = {}
        self.by_word: dict[str, set[str]] = defaultdict(set)
        self.by_fact: dict[str, str] = {}
        self.facts_of: dict[str, set[str]] = defaultdict(set)
        self._name_vecs: dict[str, NDArray[np.float32]] = {}
        self._index_ids: list[str] = []
        self._index_rows = np.zeros((0, embedder.dim), dtype=np.float32)
        # Per record: its spans as a set and its distinct episodes in order, built on
        # first use, so a record with thousands of spans is not scanned per mention.
        self._span_sets: dict[str, set[Span]] = {}
        self._episodes: dict[str, dict[str, None]] = {}
        self._terms: dict[str, tuple[str, frozenset[str]]] = {}
        self._version = 0  # bumped by every change the hub cache depends on
        self._hub_share: tuple[float, int] = (0.1, 8)
        self._hubs: tuple[tuple[int, int, tuple[float, int]], frozenset[str]] | None = None
        # Changed records in the order first changed, so the store keeps records in the
        # order they were made: a graph loaded in another process then iterates them as
        # this one does, and order-sensitive steps (the hierarchy) agree after a restart.
        self._dirty: dict[str, None] = {}
        self._deleted: set[str] = set()
        self.stamp: tuple[int, str] = (0, "")

    # loading ----------------------------------------------------------------------------
    @classmethod
    def load(
        cls, store: Store, embedder: Embedder, namespace: str, builder: str = BUILDER
    ) -> Graph:
        g = cls(store, embedder, namespace, builder)
        g.stamp = store.records_stamp(namespace)
        for rec in store.get_records(namespace, "entity", builder=g.builder):
            assert isinstance(rec, Entity)
            g._index_entity(rec)
        for rec in store.get_records(namespace, "fact", builder=g.builder):
            assert isinstance(rec, Fact)
            g._index_fact(rec)
        for rec in store.get_records(namespace, "category", builder=g.builder):
            assert isinstance(rec, Category)
            g.categories[rec.id] = rec
        return g

    def is_current(self) -> bool:
        return self.store.records_stamp(self.namespace) == self.stamp

    def _index_entity(self, ent: Entity) -> None:
        self.entities[ent.id] = ent
        self.by_key.setdefault(name_key(ent.name), ent.id)
        for alias in ent.aliases:
            self.by_key.setdefault(name_key(alias), ent.id)
        for w in content_terms(ent.name):
            self.by_word[w].add(ent.id)

    def _index_fact(self, fact: Fact) -> None:
        self.facts[fact.id] = fact
        self.by_fact.setdefault(fact_key(fact.fact), fact.id)
        for eid in fact.entity_ids or [fact.subject_id, fact.object_id]:
            self.facts_of[eid].add(fact.id)

    # entities ---------------------------------------------------------------------------
    def add_entity(self, ent: Entity) -> Entity:
        self._index_entity(ent)
        self.touch(ent)
        return ent

    def alias(self, key: str, entity_id: str) -> None:
        self.by_key.setdefault(key, entity_id)

    def add_fact(self, fact: Fact) -> Fact:
        self._index_fact(fact)
        self.touch(fact)
        return fact

    def touch(self, rec: Derived) -> None:
        self._dirty[rec.id] = None

    def delete(self, rec_id: str) -> None:
        self.categories.pop(rec_id, None)
        self._dirty.pop(rec_id, None)
        self._deleted.add(rec_id)

    def name_vectors(self, ids: Iterable[str]) -> NDArray[np.float32]:
        """Name embeddings (cached in memory and in the store) of entities or categories."""
        ids = list(ids)
        todo = [i for i in ids if i not in self._name_vecs]
        if todo:
            names = [self.name_of(i) for i in todo]
            for i, v in zip(todo, embed_cached(self.store, self.embedder, names), strict=True):
                self._name_vecs[i] = v
        if not ids:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([self._name_vecs[i] for i in ids])

    def entity_index(self) -> tuple[list[str], NDArray[np.float32]]:
        """Ids and name vectors of every non-speaker entity, grown as entities appear."""
        indexed = set(self._index_ids)
        todo = [
            i for i, e in self.entities.items() if i not in indexed and e.entity_type != "speaker"
        ]
        if todo:
            vecs = self.name_vectors(todo)
            self._index_ids.extend(todo)
            self._index_rows = np.concatenate([self._index_rows, vecs])
        return self._index_ids, self._index_rows

    def name_of(self, rec_id: str) -> str:
        rec = self.entities.get(rec_id) or self.categories.get(rec_id)
        if rec is None:
            raise KeyError(rec_id)
        return rec.name

    def speakers(self) -> list[str]:
        return [e.id for e in self.entities.values() if e.entity_type == "speaker"]

    def layer(self, n: int) -> list[Category]:
        return [c for c in self.categories.values() if c.layer == n]

    def top_layer(self) -> int:
        return max((c.layer for c in self.categories.values()), default=0)

    def episode_ids(self, rec_id: str) -> list[str]:
        """The episodes a record rests on, in order of first mention (``episode_idx``)."""
        return list(self._episode_map(rec_id))

    def _episode_map(self, rec_id: str) -> dict[str, None]:
        eps = self._episodes.get(rec_id)
        if eps is None:
            rec = self.entities.get(rec_id) or self.facts.get(rec_id)
            if rec is None:
                return {}
            eps = self._episodes[rec_id] = dict.fromkeys(s.episode for s in rec.sources)
        return eps

    def add_span(self, rec: Entity | Fact, span: Span) -> bool:
        """Add ``span`` to the record's sources unless it is there; constant time, so
        building an episode stays linear in its length however often a name recurs."""
        have = self._span_sets.get(rec.id)
        if have is None:
            have = self._span_sets[rec.id] = set(rec.sources)
        if span in have:
            return False
        have.add(span)
        rec.sources.append(span)
        self._version += 1
        self._episode_map(rec.id).setdefault(span.episode, None)
        return True

    # hubs -------------------------------------------------------------------------------
    def set_hub_share(self, share: float, least: int = 8) -> None:
        self._hub_share = (share, least)

    def hubs(self) -> frozenset[str]:
        """Entities cited by more than the hub share of the episodes any entity cites, and
        by more than ``least`` episodes: speakers and the like, which match every
        question and select nothing."""
        key = (self._version, len(self.entities), self._hub_share)
        if self._hubs is not None and self._hubs[0] == key:
            return self._hubs[1]
        maps = {eid: self._episode_map(eid) for eid in self.entities}
        total = len(set().union(*maps.values())) if maps else 0
        limit = max(self._hub_share[0] * total, self._hub_share[1])
        hubs = frozenset(e for e, eps in maps.items() if total and len(eps) > limit)
        self._hubs = (key, hubs)
        return hubs

    def cites_any(self, entity_ids: Iterable[str], episode: str) -> bool:
        return any(episode in self._episode_map(e) for e in entity_ids)

    def name_terms(self, rec_id: str) -> frozenset[str]:
        """Content words of an entity's name, as the query's are counted."""
        name = self.entities[rec_id].name
        cached = self._terms.get(rec_id)
        if cached is None or cached[0] != name:
            cached = self._terms[rec_id] = (name, frozenset(content_terms(name)))
        return cached[1]

    # writing ----------------------------------------------------------------------------
    def pending(self) -> int:
        return len(self._dirty) + len(self._deleted)

    def flush(self, built: tuple[str, list[int]] | None = None) -> None:
        """Write every changed record (and the builder's progress) in one transaction."""
        put: list[Derived] = []
        for rid in self._dirty:
            rec = self.entities.get(rid) or self.facts.get(rid) or self.categories.get(rid)
            if rec is not None:
                put.append(rec)
        # Children before the categories that link to them.
        put.sort(key=lambda r: r.layer if isinstance(r, Category) else 0)
        self.store.write_records(
            self.namespace, put, sorted(self._deleted), built, owner=self.builder
        )
        self._dirty.clear()
        self._deleted.clear()
        self.stamp = self.store.records_stamp(self.namespace)
