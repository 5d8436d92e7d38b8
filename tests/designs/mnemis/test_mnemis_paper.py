"""``mnemis-paper`` on the heuristic tier: its records apart from ``mnemis``'s, the
hierarchy by the paper's rules only, rebuilt rather than placed into, and the paper's
System-1 (plain, top k) in its union. Store, embeddings and builder are real."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memstrata.designs.mnemis.builder import unplaced
from memstrata.designs.mnemis.checks import hierarchy_problems
from memstrata.designs.mnemis.graph import BUILDER, PAPER_BUILDER, Graph
from memstrata.designs.mnemis.hierarchy import Hierarchy, HierarchyParams
from memstrata.designs.mnemis.records import Category
from memstrata.designs.mnemis.route import MnemisRoute
from memstrata.memory import Memory
from memstrata.models import Entity, Span
from memstrata.retrieval.system1 import EpisodeRoute, System1Params
from memstrata.store import SQLiteStore


def check_hierarchy(graph: Graph, n: int, max_layers: int) -> None:
    assert hierarchy_problems(graph, n, max_layers) == []


def test_the_paper_recipe_builds_records_of_its_own_and_searches(
    tmp_path: Path, embedder, sample
) -> None:
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        m.add_many(sample)
        (paper,) = m.build(recipe="mnemis-paper")
        assert paper.tier == "heuristic" and paper.details["hierarchy"] == "built"
        assert paper.episodes == 32 and paper.failed == 0
        # the fused recipe's builder has built nothing yet: the records are apart
        assert not Graph.load(m.store, embedder, "default").entities
        (fused,) = m.build(recipe="mnemis")
        assert fused.counts["entity"] == paper.counts["entity"]  # the same base graph
        ours = Graph.load(m.store, embedder, "default")
        theirs = Graph.load(m.store, embedder, "default", PAPER_BUILDER)
        r = m.search(
            "Where is Maya flying for the conference?", recipe="mnemis-paper", k=25, max_tokens=None
        )
    assert not set(ours.entities) & set(theirs.entities)
    assert not set(ours.categories) & set(theirs.categories)
    check_hierarchy(theirs, n=3, max_layers=4)
    kinds = [h.kind for h in r.hits]
    assert kinds[:5] == ["episode"] * 5 and "fact" in kinds and "entity" in kinds
    assert any("Lisbon" in h.text for h in r.hits[:5])
    assert all(h.sources for h in r.hits)
    # every hit is System-1's or System-2's: no episode of our own rankings
    assert all(set(h.routes) & {"system1", "system2"} for h in r.hits if h.kind == "episode")
    ids = {h.id for h in r.hits if h.kind != "episode"}
    assert ids <= set(theirs.entities) | set(theirs.facts) | set(theirs.categories)


def _graph(embedder, n: int) -> Graph:
    """``n`` entities in three themes, each cited by its own turn."""
    graph = Graph(SQLiteStore(":memory:"), embedder, "t")
    themes = ["fruit", "city", "instrument"]
    for i in range(n):
        name = f"{themes[i % 3]} number {i}"
        graph.add_entity(
            Entity(namespace="t", name=name, sources=[Span(episode=f"e{i}", start=0, end=1)])
        )
    return graph


def test_no_stop_at_a_small_layer_in_the_paper_hierarchy(embedder) -> None:
    """Ours ends the build at the first layer of 12 nodes or fewer; the paper's rules
    (the node-count reduction and the layer limit) go on to broader layers."""
    ours = asyncio.run(Hierarchy(_graph(embedder, 36), HierarchyParams()).rebuild())
    paper = asyncio.run(Hierarchy(_graph(embedder, 36), HierarchyParams(top_width=0)).rebuild())
    assert len(ours) == 1 and ours[0] <= 12
    assert len(paper) > 1 and paper[0] == ours[0]
    assert all(up <= down for down, up in zip(paper, paper[1:], strict=False))
    assert len(paper) <= 4


def test_the_paper_builder_rebuilds_where_ours_places(tmp_path: Path, embedder, sample) -> None:
    items = list(sample)
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        m.add_many(items[:24])
        m.build(recipe="mnemis")
        m.build(recipe="mnemis-paper")
        before = {
            b: set(Graph.load(m.store, embedder, "default", b).categories)
            for b in (BUILDER, PAPER_BUILDER)
        }
        m.add_many(items[24:])
        (ours,) = m.build(recipe="mnemis")
        (paper,) = m.build(recipe="mnemis-paper")
        (again,) = m.build(recipe="mnemis-paper")
        graphs = {b: Graph.load(m.store, embedder, "default", b) for b in (BUILDER, PAPER_BUILDER)}
    assert ours.details["hierarchy"] == "incremental"
    assert before[BUILDER] & set(graphs[BUILDER].categories)
    assert paper.details["hierarchy"] == "rebuilt" and again.details["hierarchy"] == "unchanged"
    assert not before[PAPER_BUILDER] & set(graphs[PAPER_BUILDER].categories)
    assert not unplaced(graphs[PAPER_BUILDER])
    check_hierarchy(graphs[PAPER_BUILDER], n=3, max_layers=4)


def test_a_hierarchy_missing_an_entity_is_unplaced(embedder) -> None:
    graph = _graph(embedder, 4)
    ids = list(graph.entities)
    cat = Category(namespace="t", name="Things", layer=1, child_ids=ids[:3])
    graph.categories[cat.id] = cat
    assert unplaced(graph)
    cat.child_ids.append(ids[3])
    assert not unplaced(graph)


def test_the_paper_system1_is_plain_and_brings_its_top_k(
    tmp_path: Path, embedder, sample, monkeypatch: pytest.MonkeyPatch
) -> None:
    """System-1's episodes: dense and BM25 by reciprocal ranks, no boosts, its top k
    (ours asks for 50 to fuse)."""
    asked: dict[str, tuple[System1Params, int]] = {}
    search = EpisodeRoute.search

    def spy(self, namespace, queries, k, filters=None, qvecs=None):  # type: ignore[no-untyped-def]
        asked[self.params.rrf_k and "ours" or "paper"] = (self.params, k)
        return search(self, namespace, queries, k, filters, qvecs)

    monkeypatch.setattr(EpisodeRoute, "search", spy)
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        m.add_many(sample)
        m.build(recipe="mnemis")
        m.build(recipe="mnemis-paper")
        for recipe in ("mnemis", "mnemis-paper"):
            m.search("Where is Maya flying?", recipe=recipe, k=25, max_tokens=None)
        route = next(r for r in m.engine.routes("mnemis-paper") if isinstance(r, MnemisRoute))
    assert asked["paper"] == (System1Params(rrf_k=0), 5)
    assert asked["ours"][1] == 50 and asked["ours"][0] != System1Params(rrf_k=0)
    assert route.params.rrf_k == 0 and route.params.builder == PAPER_BUILDER
