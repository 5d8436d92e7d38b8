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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memstrata.designs.personalai.graph import EdgeKind, PAGraph, Topology, name_key
from memstrata.embed.cache import embed_cached

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


def compare(
    graph: PAGraph, topo: Topology, entities: list[str], params: ComparatorParams
) -> list[int]:
    """Start nodes for the query entities: exact name matches first, then by cosine."""
    exact: dict[int, None] = {}
    for e in entities:
        oid = graph.by_name.get(name_key(e))
        if oid is not None:
            exact.setdefault(topo.index[f"o:{oid}"], None)
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
    ordered = list(exact) + sorted(scored, key=lambda j: -scored[j])
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
