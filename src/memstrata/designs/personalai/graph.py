"""The PersonalAI graph of one namespace: records in the store, topology in rustworkx.

Records are the core's: object nodes are :class:`Entity` (``entity_type="object"``),
simple relations are :class:`Fact` triplets, propositions are :class:`Thesis` hyperedges
over the objects they mention. Episodic nodes are the store's episodes; the episodic
hyperedge of an episode is read from the provenance of the objects (an object's
``sources`` name the episodes that mention it), so it needs no record of its own.

The traversal graph is an undirected ``rustworkx.PyGraph`` (chosen by measured speed, see
docs/personalai.md) over three node types, keyed ``o:<id>``, ``t:<id>`` and ``e:<episode
id>``. Its edges are simple relations (object-object, one per valid triplet), hyper
edges (thesis-object) and episodic edges (episode-object). Superseded triplets and
theses (``invalid_at`` set) stay in the store and out of the traversal graph.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Literal

import numpy as np
import rustworkx as rx
from numpy.typing import NDArray

from memstrata import nlp
from memstrata.designs.personalai.records import Thesis
from memstrata.embed.base import Embedder
from memstrata.embed.cache import embed_cached
from memstrata.models import Derived, Entity, Fact
from memstrata.retrieval import documents
from memstrata.retrieval.text import content_terms
from memstrata.store.base import Store

NodeType = Literal["object", "thesis", "episode"]
EdgeKind = Literal["simple", "hyper", "episodic"]
#: the builder that owns the records this design reads and writes
BUILDER = "personalai"
OBJECT = "object"
PREFIX: dict[str, NodeType] = {"o": "object", "t": "thesis", "e": "episode"}


def name_key(name: str) -> str:
    """Identity of an object name (:func:`memstrata.nlp.name_key`): its words folded (NFC,
    case-folded, possessive off), leading determiners off."""
    return nlp.name_key(name)


def text_key(text: str) -> str:
    """A text as compared: NFC, case-folded, runs of whitespace one space."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def reply_key(text: str) -> str:
    """How a model's reply names an item it was shown: case, punctuation, quotes and a
    trailing period do not count ("Maya, works at, Acme." is "maya works at acme")."""
    return " ".join(re.findall(r"\w+", text.casefold()))


def node_type(key: str) -> NodeType:
    return PREFIX[key[0]]


class PAGraph:
    """Objects, triplets and theses of one namespace, with change tracking and topology."""

    def __init__(self, store: Store, embedder: Embedder, namespace: str) -> None:
        self.store = store
        self.embedder = embedder
        self.namespace = namespace
        self.objects: dict[str, Entity] = {}
        self.triplets: dict[str, Fact] = {}
        self.theses: dict[str, Thesis] = {}
        self.by_name: dict[str, str] = {}
        self.by_word: dict[str, set[str]] = defaultdict(set)
        self.by_triplet: dict[str, str] = {}
        self.by_thesis: dict[str, str] = {}
        self.triplets_of: dict[str, set[str]] = defaultdict(set)
        self.theses_of: dict[str, set[str]] = defaultdict(set)
        self._dirty: set[str] = set()
        self._gone: set[str] = set()
        self._topology: Topology | None = None
        self._episode_text: dict[str, str] = {}
        self.stamp: tuple[int, str] = (0, "")

    # loading ----------------------------------------------------------------------------
    @classmethod
    def load(cls, store: Store, embedder: Embedder, namespace: str) -> PAGraph:
        g = cls(store, embedder, namespace)
        g.stamp = store.records_stamp(namespace)
        for rec in store.get_records(namespace, "entity", builder=BUILDER):
            if isinstance(rec, Entity) and rec.entity_type == OBJECT:
                g._index_object(rec)
        for rec in store.get_records(namespace, "fact", builder=BUILDER):
            if isinstance(rec, Fact) and rec.subject_id in g.objects:
                g._index_triplet(rec)
        for rec in store.get_records(namespace, "thesis", builder=BUILDER):
            assert isinstance(rec, Thesis)
            g._index_thesis(rec)
        return g

    def is_current(self) -> bool:
        return self.store.records_stamp(self.namespace) == self.stamp

    def _index_object(self, ent: Entity) -> None:
        self.objects[ent.id] = ent
        self.by_name.setdefault(name_key(ent.name), ent.id)
        for w in content_terms(ent.name):
            self.by_word[w].add(ent.id)

    def _index_triplet(self, fact: Fact) -> None:
        self.triplets[fact.id] = fact
        if fact.invalid_at is None:
            self.by_triplet.setdefault(text_key(fact.fact), fact.id)
        for eid in (fact.subject_id, fact.object_id):
            self.triplets_of[eid].add(fact.id)

    def _index_thesis(self, th: Thesis) -> None:
        self.theses[th.id] = th
        if th.invalid_at is None:
            self.by_thesis.setdefault(text_key(th.text), th.id)
        for eid in th.entity_ids:
            self.theses_of[eid].add(th.id)

    # changes ----------------------------------------------------------------------------
    def add_object(self, ent: Entity) -> Entity:
        self._index_object(ent)
        self.touch(ent)
        return ent

    def add_triplet(self, fact: Fact) -> Fact:
        self._index_triplet(fact)
        self.touch(fact)
        return fact

    def add_thesis(self, th: Thesis) -> Thesis:
        self._index_thesis(th)
        self.touch(th)
        return th

    def retire(self, rec: Fact | Thesis, by: str, at: datetime) -> None:
        """Mark ``rec`` superseded by record ``by`` at ``at`` (when the episode that
        replaced it happened): ``invalid_at``, a link, and the record kept."""
        if rec.invalid_at is None:
            rec.invalid_at = at
        if by not in rec.replaced_by:
            rec.replaced_by.append(by)
        if isinstance(rec, Fact):
            key = text_key(rec.fact)
            if self.by_triplet.get(key) == rec.id:
                del self.by_triplet[key]
        else:
            key = text_key(rec.text)
            if self.by_thesis.get(key) == rec.id:
                del self.by_thesis[key]
        self.touch(rec)

    def touch(self, rec: Derived) -> None:
        self._dirty.add(rec.id)
        self._topology = None

    def drop(self, rec_id: str) -> None:
        """Remove a triplet or thesis (a repair found it resting on removed text)."""
        rec = self.triplets.pop(rec_id, None) or self.theses.pop(rec_id, None)
        if rec is None:
            return
        ends = [rec.subject_id, rec.object_id] if isinstance(rec, Fact) else rec.entity_ids
        for eid in ends:
            self.triplets_of.get(eid, set()).discard(rec_id)
            self.theses_of.get(eid, set()).discard(rec_id)
        self._dirty.discard(rec_id)
        self._gone.add(rec_id)
        self._topology = None

    def pending(self) -> int:
        return len(self._dirty)

    def dirty(self) -> set[str]:
        """Ids of the records changed since the last flush."""
        return set(self._dirty)

    def flush(self, built: tuple[str, Sequence[int]] | None = None) -> None:
        """Write every changed record and the builder's done marks in one transaction."""
        put: list[Derived] = []
        for rid in self._dirty:
            rec = self.objects.get(rid) or self.triplets.get(rid) or self.theses.get(rid)
            if rec is not None:
                put.append(rec)
        # Objects before the triplets and theses that point to them.
        put.sort(key=lambda r: 0 if isinstance(r, Entity) else 1)
        self.store.write_records(self.namespace, put, sorted(self._gone), built, owner=BUILDER)
        self._dirty.clear()
        self._gone.clear()
        self.stamp = self.store.records_stamp(self.namespace)

    # reading ----------------------------------------------------------------------------
    def valid_triplets(self) -> list[Fact]:
        return [f for f in self.triplets.values() if f.invalid_at is None]

    def valid_theses(self) -> list[Thesis]:
        return [t for t in self.theses.values() if t.invalid_at is None]

    def episodes_of(self, object_id: str) -> list[str]:
        return list(dict.fromkeys(s.episode for s in self.objects[object_id].sources))

    def topology(self) -> Topology:
        if self._topology is None:
            self._topology = Topology(self)
        return self._topology

    def node_text(self, key: str) -> str:
        kind, rid = key[0], key[2:]
        if kind == "o":
            return self.objects[rid].name
        if kind == "t":
            return self.theses[rid].text
        return self.episode_texts([rid])[rid]

    def episode_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """Episodes' embedder inputs (so their vectors come from the store's cache)."""
        ids = list(dict.fromkeys(ids))
        todo = [i for i in ids if i not in self._episode_text]
        if todo:
            for ep in self.store.get_episodes(self.namespace, todo):
                self._episode_text[ep.id] = documents.embed_text(ep.text, ep.speaker, ep.metadata)
            for i in todo:
                self._episode_text.setdefault(i, "")
        return {i: self._episode_text[i] for i in ids}


class Topology:
    """The traversal graph: node keys <-> rustworkx indexes, edges with their records."""

    def __init__(self, graph: PAGraph) -> None:
        self.graph = graph
        self.g: rx.PyGraph = rx.PyGraph(multigraph=True)
        self.index: dict[str, int] = {}
        self._vectors: NDArray[np.float32] | None = None
        for oid in graph.objects:
            self._node(f"o:{oid}")
        edges: list[tuple[int, int, tuple[EdgeKind, str]]] = []
        for f in graph.valid_triplets():
            if f.subject_id in graph.objects and f.object_id in graph.objects:
                a, b = self.index[f"o:{f.subject_id}"], self.index[f"o:{f.object_id}"]
                edges.append((a, b, ("simple", f.id)))
        for th in graph.valid_theses():
            t = self._node(f"t:{th.id}")
            for eid in th.entity_ids:
                if eid in graph.objects:
                    edges.append((t, self.index[f"o:{eid}"], ("hyper", th.id)))
        for oid, ent in graph.objects.items():
            o = self.index[f"o:{oid}"]
            for ep in dict.fromkeys(s.episode for s in ent.sources):
                edges.append((self._node(f"e:{ep}"), o, ("episodic", ep)))
        self.g.add_edges_from(edges)
        self.keys: list[str] = [self.g[i] for i in range(len(self.g))]
        self.n_objects = len(graph.objects)  # object nodes come first: 0 .. n_objects-1
        self.types: list[NodeType] = [node_type(k) for k in self.keys]
        self._adj: list[list[tuple[int, int, EdgeKind, str]]] | None = None

    def _node(self, key: str) -> int:
        i = self.index.get(key)
        if i is None:
            i = self.g.add_node(key)
            self.index[key] = i
        return i

    def __len__(self) -> int:
        return len(self.g)

    def adjacency(self) -> list[list[tuple[int, int, EdgeKind, str]]]:
        """Per node, its (neighbour, edge index, edge kind, record id), read once from the
        library graph: traversals that score every step in Python walk this list."""
        if self._adj is None:
            adj: list[list[tuple[int, int, EdgeKind, str]]] = [[] for _ in range(len(self.g))]
            for e, (a, b, (kind, rid)) in self.g.edge_index_map().items():
                adj[a].append((b, e, kind, rid))
                adj[b].append((a, e, kind, rid))
            self._adj = adj
        return self._adj

    def edge(self, e: int) -> tuple[EdgeKind, str]:
        data: tuple[EdgeKind, str] = self.g.get_edge_data_by_index(e)
        return data

    def vectors(self) -> NDArray[np.float32]:
        """Unit vectors of every node's text (names, theses, episodes), by node index."""
        if self._vectors is None:
            self.graph.episode_texts(k[2:] for k in self.keys if k[0] == "e")
            texts = [self.graph.node_text(k) for k in self.keys]
            self._vectors = embed_cached(self.graph.store, self.graph.embedder, texts)
        return self._vectors
