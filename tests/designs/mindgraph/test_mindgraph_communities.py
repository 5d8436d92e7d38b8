"""Leiden subgraphs (fixed seed, at most 10 nodes) and their reports, made on first
access and cached in the store by the graph's hash."""

from __future__ import annotations

import asyncio
import json

import pytest

from memstrata.designs.mindgraph.communities import ReportCache, partition
from memstrata.designs.mindgraph.graph import ConceptGraph, Edge, Node
from memstrata.designs.mindgraph.records import Community
from memstrata.llm import LLMClient, ScriptedBackend
from memstrata.models import Span
from memstrata.store import SQLiteStore


def clusters(n_groups: int, size: int) -> ConceptGraph:
    """Cliques of ``size`` nodes joined in a ring by one edge each."""
    g = ConceptGraph()
    for c in range(n_groups):
        ids = [f"n{c}_{i}" for i in range(size)]
        for nid in ids:
            g.nodes[nid] = Node(nid, "claim", f"fact {nid}", 0, 5)
        g.edges += [Edge(a, b, "rel") for i, a in enumerate(ids) for b in ids[i + 1 :]]
        g.edges.append(Edge(ids[0], f"n{(c + 1) % n_groups}_0", "next"))
    return g


def test_leiden_is_deterministic_and_bounded() -> None:
    g = clusters(4, 6)
    first = partition(g)
    assert first == partition(g) == partition(ConceptGraph.from_dict(g.to_dict()))
    assert sorted(n for p in first for n in p) == sorted(g.nodes)
    assert all(len(p) <= 10 for p in first)
    assert len(first) == 4  # the four cliques


@pytest.mark.parametrize("shape", ["clique", "star"])
def test_large_clusters_are_split_to_at_most_ten(shape: str) -> None:
    g = ConceptGraph()
    for i in range(25):
        g.nodes[f"n{i}"] = Node(f"n{i}", "claim", f"fact {i}")
    if shape == "clique":
        g.edges = [Edge(f"n{i}", f"n{j}", "r") for i in range(25) for j in range(i + 1, 25)]
    else:  # Leiden keeps a star whole: it is cut by degree, the hub first
        g.edges = [Edge("n0", f"n{i}", "r") for i in range(1, 25)]
    parts = partition(g)
    assert all(len(p) <= 10 for p in parts)
    assert sorted(n for p in parts for n in p) == sorted(g.nodes)
    assert partition(g) == parts


def test_nodes_without_edges_share_subgraphs_of_at_most_ten() -> None:
    """23 loose nodes beside a triangle: three subgraphs of them (10, 10, 3), not 23, so
    23 report calls become 3."""
    g = ConceptGraph()
    for nid in ("n0_0", "n0_1", "n0_2"):
        g.nodes[nid] = Node(nid, "claim", f"fact {nid}")
    g.edges = [Edge("n0_0", "n0_1", "r"), Edge("n0_1", "n0_2", "r"), Edge("n0_0", "n0_2", "r")]
    for i in range(23):
        g.nodes[f"z{i:02d}"] = Node(f"z{i:02d}", "entity", f"Z{i}")
    parts = partition(g)
    assert sorted(len(p) for p in parts) == [3, 3, 10, 10]
    assert ["n0_0", "n0_1", "n0_2"] in parts  # the triangle keeps its own
    assert sorted(n for p in parts for n in p) == sorted(g.nodes)
    g = ConceptGraph(nodes={"a": Node("a", "entity", "A"), "b": Node("b", "entity", "B")})
    assert partition(g) == [["a", "b"]]
    assert partition(ConceptGraph()) == []


def _store_with_doc() -> SQLiteStore:
    from memstrata.config import Config
    from memstrata.ingest import prepare_episode

    store = SQLiteStore(":memory:")
    store.add_episodes("ns", [prepare_episode({"text": "x" * 100, "id": "document"}, Config())])
    return store


def spans(g: ConceptGraph) -> dict[str, list[Span]]:
    return {n: [Span(episode="document", start=0, end=5)] for n in g.nodes}


def test_reports_are_made_once_per_graph_hash() -> None:
    store = _store_with_doc()
    g = clusters(3, 4)
    first = ReportCache(store, "ns", g, spans(g), None, "q")
    subs = asyncio.run(first.get())
    assert first.generated and len(subs) == 3
    assert all(s.title and s.findings and 0 <= s.rating <= 10 for s in subs)
    assert max(s.rating for s in subs) == 10
    recs = store.get_records("ns", "community", builder=None)
    assert len(recs) == 3 and all(
        isinstance(r, Community) and r.graph == first.digest for r in recs
    )
    # another process (a new cache object) reads them from the store
    again = ReportCache(store, "ns", g, spans(g), None, "q")
    assert [s.detail() for s in asyncio.run(again.get())] == [s.detail() for s in subs]
    assert not again.generated
    # a changed graph has another hash and gets its own reports
    g.nodes["n0_0"].content = "changed"
    changed = ReportCache(store, "ns", g, spans(g), None, "q")
    asyncio.run(changed.get())
    assert changed.generated and changed.digest != first.digest
    assert len(store.get_records("ns", "community", builder=None)) == 6


def test_llm_reports_and_their_fallback() -> None:
    store = _store_with_doc()
    g = clusters(2, 3)
    good = {"title": "Cluster", "summary": "About facts.", "rating": 7, "findings": ["f1"]}
    backend = ScriptedBackend([good, "garbage", "garbage", "garbage"])
    cache = ReportCache(store, "ns", g, spans(g), LLMClient(backend, max_retries=2), "q")
    subs = asyncio.run(cache.get())
    titles = sorted(s.title for s in subs)
    assert "Cluster" in titles  # one report from the model
    assert any(t.startswith("fact ") for t in titles)  # the failed one is extractive
    assert "About facts." in json.dumps([s.summary for s in subs])
