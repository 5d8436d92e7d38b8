"""What the four retrievers share: the items they return, node-type restrictions, the
knowledge comparator, the triplet filter and the Mixed retriever.

A retrieved **item** is the paper's "triplet" in its three forms: a simple relation
(``simple``, a :class:`Fact`), a hyperedge to a thesis node (``hyper``, a
:class:`Thesis`) or to an episodic node (``episodic``, an episode). Each carries the path
of node keys that found it, for ``--explain``.

**Restrictions** (section 4, "Graph search restrictions"): ``E``, ``T`` and ``O`` bar
episodic, thesis and object nodes from a traversal, in any combination (``"ET"``). The
start nodes, the matched objects, are where a search stands, so ``O`` bars every object
after them: what is left is the theses and episodes around the starts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memstrata.designs.personalai.graph import EdgeKind, PAGraph, Topology, name_key
from memstrata.embed.cache import embed_cached
from memstrata.retrieval.text import content_terms

Retriever = Literal["astar", "watercircles", "beam"]
TYPE_OF_LETTER = {"E": "episode", "T": "thesis", "O": "object"}


@dataclass
class Item:
    kind: EdgeKind
    rid: str
    path: list[str] = field(default_factory=list)
    via: str = ""


@dataclass
class Query:
    """One question as the retrievers see it: its vector, its start nodes, the graph."""

    text: str
    vector: NDArray[np.float32]
    starts: list[int]
    topo: Topology
    banned: frozenset[str] = frozenset()
    #: every node a traversal entered, for tests of the restrictions
    visited: set[int] = field(default_factory=set)

    def allowed(self, node: int) -> bool:
        return self.topo.types[node] not in self.banned

    def similarity(self, nodes: list[int] | NDArray[np.int64]) -> NDArray[np.float32]:
        vecs = self.topo.vectors()
        out: NDArray[np.float32] = vecs[np.asarray(nodes, dtype=np.int64)] @ self.vector
        return out


def banned_types(restrict: str) -> frozenset[str]:
    return frozenset(TYPE_OF_LETTER[c] for c in restrict.upper())


class RestrictParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: node types barred from traversal: any of E (episodic), T (thesis), O (object)
    restrict: str = ""

    @field_validator("restrict")
    @classmethod
    def _letters(cls, v: str) -> str:
        bad = set(v.upper()) - set(TYPE_OF_LETTER)
        if bad:
            raise ValueError(f"restrict takes E, T and O; got {''.join(sorted(bad))!r}")
        return "".join(dict.fromkeys(v.upper()))


class ComparatorParams(BaseModel):
    """The knowledge comparator: query entities to object nodes by name and embedding."""

    model_config = ConfigDict(extra="forbid")

    #: object nodes matched per query entity by embedding, besides exact name matches
    top: int = Field(default=2, ge=0)
    #: least cosine between a query entity and an object name for an embedding match
    threshold: float = Field(default=0.8, ge=-1, le=1)
    #: start nodes per query at most (best first)
    max_starts: int = Field(default=8, ge=1)


_CONJUNCTION = re.compile(r"\s+(?:and|&)\s+", re.IGNORECASE)


def name_parts(entity: str) -> list[str]:
    """The names a conjunction joins ("Iain Banks and Irwin Shaw"); none if it joins
    nothing."""
    parts = [p.strip() for p in _CONJUNCTION.split(entity) if p.strip()]
    return parts if len(parts) > 1 else []


def containing(graph: PAGraph, name: str, limit: int) -> list[str]:
    """Objects whose name holds every content word of a multi-word ``name``, shortest
    name first: "Dick Humbert" in "Richard Elmer Dick Humbert", "Peter Rogers" in
    "Producer Peter Rogers". One-word names are left to the embedding match."""
    words = content_terms(name)
    if len(words) < 2 or limit <= 0:
        return []
    found = set(graph.by_word.get(words[0], ()))
    for w in words[1:]:
        found &= graph.by_word.get(w, set())
        if not found:
            return []
    return sorted(found, key=lambda o: (len(graph.objects[o].name), graph.objects[o].name))[:limit]


def compare(
    graph: PAGraph, topo: Topology, entities: list[str], params: ComparatorParams
) -> list[int]:
    """Start nodes for the query entities: exact name matches first, then objects named
    by an entity's parts, then by cosine.

    An entity that joins names by a conjunction ("A and B") is matched as itself and as
    each name it joins; a multi-word entity (or part) with no object of its exact name
    matches the ``top`` shortest objects whose names hold all its words."""
    exact: dict[int, None] = {}
    partial: dict[int, None] = {}
    for e in entities:
        for name in [e, *name_parts(e)]:
            oid = graph.by_name.get(name_key(name))
            if oid is not None:
                exact.setdefault(topo.index[f"o:{oid}"], None)
                continue
            for o in containing(graph, name, params.top):
                partial.setdefault(topo.index[f"o:{o}"], None)
    scored: dict[int, float] = {}
    if entities and topo.n_objects and params.top:
        qv = embed_cached(graph.store, graph.embedder, entities)
        sims = qv @ topo.vectors()[: topo.n_objects].T
        top = min(params.top, topo.n_objects)
        for row in sims:
            best = np.argpartition(-row, top - 1)[:top]
            for j in best:
                if row[j] >= params.threshold and int(j) not in exact:
                    scored[int(j)] = max(scored.get(int(j), -1.0), float(row[j]))
    ordered = list(dict.fromkeys([*exact, *partial]))
    ordered += sorted((j for j in scored if j not in partial), key=lambda j: -scored[j])
    return ordered[: params.max_starts]


def item_text(graph: PAGraph, item: Item) -> str:
    if item.kind == "simple":
        return graph.triplets[item.rid].fact
    if item.kind == "hyper":
        return graph.theses[item.rid].text
    return graph.episode_texts([item.rid])[item.rid]


def dedupe(graph: PAGraph, items: list[Item]) -> list[Item]:
    """Items once each by content (the paper de-duplicates triples by their string)."""
    seen: set[str] = set()
    out = []
    for it in items:
        key = f"{it.kind}:{item_text(graph, it).casefold()}"
        if key not in seen:
            seen.add(key)
            out.append(it)
    return out


def triplet_filter(
    graph: PAGraph, query: Query, items: list[Item], top_n: int
) -> list[tuple[Item, float]]:
    """The triplets filter: the ``top_n`` items most similar to the question."""
    if not items:
        return []
    topo = query.topo
    vecs = topo.vectors()
    rows = np.zeros((len(items), vecs.shape[1]), dtype=np.float32)
    facts = [i for i, it in enumerate(items) if it.kind == "simple"]
    if facts:
        rows[facts] = embed_cached(
            graph.store, graph.embedder, [graph.triplets[items[i].rid].fact for i in facts]
        )
    for i, it in enumerate(items):
        if it.kind != "simple":
            prefix = "t" if it.kind == "hyper" else "e"
            rows[i] = vecs[topo.index[f"{prefix}:{it.rid}"]]
    sims = rows @ query.vector
    order = np.argsort(-sims, kind="stable")[:top_n]
    return [(items[i], float(sims[i])) for i in order]


def path_keys(topo: Topology, nodes: list[int]) -> list[str]:
    return [topo.keys[n] for n in nodes]


def mixed(runs: list[Callable[[Query], list[Item]]], query: Query) -> list[Item]:
    """The Mixed retriever: the union of the chosen retrievers' items, first found first."""
    out: list[Item] = []
    seen: set[tuple[str, str]] = set()
    for run in runs:
        for it in run(query):
            if (it.kind, it.rid) not in seen:
                seen.add((it.kind, it.rid))
                out.append(it)
    return out
