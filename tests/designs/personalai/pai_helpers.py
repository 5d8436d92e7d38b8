"""Helpers of the PersonalAI tests: hand-made graphs in an in-memory store."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from memstrata.designs.personalai.graph import OBJECT, PAGraph, Topology, name_key
from memstrata.designs.personalai.records import Thesis
from memstrata.designs.personalai.retrieve import Query
from memstrata.embed.base import Embedder
from memstrata.models import Entity, Fact, Span
from memstrata.store import PreparedEpisode, SQLiteStore

NS = "t"


def add_episodes(store: SQLiteStore, texts: dict[str, str]) -> None:
    store.add_episodes(
        NS,
        [
            PreparedEpisode(
                external_id=eid,
                text=text,
                content_hash=hashlib.sha256(f"{eid}:{text}".encode()).digest()[:16],
                index_text=text,
            )
            for eid, text in texts.items()
        ],
    )


def make_graph(
    store: SQLiteStore,
    embedder: Embedder,
    objects: Sequence[str],
    triplets: Sequence[tuple[str, str, str]] = (),
    theses: Sequence[tuple[str, Sequence[str]]] = (),
    episodes: dict[str, Sequence[str]] | None = None,
) -> PAGraph:
    """A graph of named objects; ``episodes`` maps an episode id to the objects it
    mentions (its text is the names joined). Written to the store and loaded back."""
    episodes = episodes or {}
    add_episodes(store, {e: " and ".join(names) + "." for e, names in episodes.items()})
    g = PAGraph(store, embedder, NS)
    ids: dict[str, str] = {}
    for name in objects:
        ent = Entity(namespace=NS, name=name, entity_type=OBJECT)
        for e, names in episodes.items():
            if name in names:
                ent.sources.append(Span(episode=e, start=0, end=1))
        ids[name] = g.add_object(ent).id
    for s, r, o in triplets:
        g.add_triplet(
            Fact(
                namespace=NS,
                subject_id=ids[s],
                object_id=ids[o],
                relation=r,
                fact=f"{s} {r} {o}",
                entity_ids=[ids[s], ids[o]],
            )
        )
    for text, names in theses:
        g.add_thesis(Thesis(namespace=NS, text=text, entity_ids=[ids[n] for n in names]))
    g.flush()
    return PAGraph.load(store, embedder, NS)


def node(topo: Topology, graph: PAGraph, name: str) -> int:
    return topo.index[f"o:{graph.by_name[name_key(name)]}"]


def query(graph: PAGraph, starts: Sequence[str], vector: np.ndarray | None = None) -> Query:
    topo = graph.topology()
    vecs = topo.vectors()
    qv = vector if vector is not None else vecs[node(topo, graph, starts[0])]
    return Query(
        "q", np.asarray(qv, dtype=np.float32), [node(topo, graph, s) for s in starts], topo
    )


def set_vectors(topo: Topology, rows: dict[int, np.ndarray]) -> None:
    """Hand-made node vectors (unit length), for traversals with a known answer."""
    vecs = topo.vectors().copy()
    for i, v in rows.items():
        vecs[i] = v / np.linalg.norm(v)
    topo._vectors = vecs
