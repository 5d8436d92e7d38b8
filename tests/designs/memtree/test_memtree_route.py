"""MemTree retrieval: collapsed vs traversal, inner-node citations, recipes and ``show``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from memstrata.designs.memtree.builder import tree_cache
from memstrata.designs.memtree.route import MemTreeRoute, MemTreeRouteParams
from memstrata.designs.memtree.show import show
from memstrata.memory import Memory

QUERY = "Where is the conference Maya is going to?"


@pytest.fixture
def memory(tmp_path: Path, embedder, sample):
    with Memory.open(
        tmp_path / "m.db", embedder=embedder, recipe="memtree", **{"build.mode": "manual"}
    ) as m:
        m.add_many(sample)
        (report,) = m.build()
        assert report.failed == 0 and report.counts["tree_node"] > len(sample)
        yield m


def _search(m: Memory, params: dict, k: int):
    ctx = m.engine.base  # the long-lived context the engine hands to routes
    route = MemTreeRoute(MemTreeRouteParams(**params))
    (hits,) = asyncio.run(route.search(ctx, "default", [QUERY], k))
    return ctx, hits


def test_collapsed_ranks_every_node_by_cosine(memory: Memory, embedder) -> None:
    """With ``bm25_weight = 0``, the paper's collapsed search: cosine alone."""
    ctx, hits = _search(memory, {"theta_retrieve": -1.0, "bm25_weight": 0}, 8)
    tree = tree_cache(ctx).get("default")
    ids, rows = tree.matrix()
    q = np.asarray(embedder.embed([QUERY])[0], dtype=np.float32)
    sims = dict(zip(ids, (rows @ (q / np.linalg.norm(q))).tolist(), strict=True))
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert {h.kind for h in hits} <= {"episode", "tree_node"}
    best = max(sims.values())
    assert hits[0].score == pytest.approx(best, abs=1e-5)
    assert len(hits) == 8 and tree.root_id not in {h.id for h in hits}


def test_theta_retrieve_drops_weak_nodes(memory: Memory) -> None:
    _, hits = _search(memory, {"theta_retrieve": 0.45, "bm25_weight": 0}, 50)
    assert hits and all(h.score >= 0.45 for h in hits)
    _, fused = _search(memory, {"theta_retrieve": 0.45}, 50)  # the cosine decides there too
    assert {h.id for h in fused} == {h.id for h in hits}
    _, none = _search(memory, {"theta_retrieve": 0.99}, 50)
    assert none == []


def test_traversal_follows_the_tree_level_by_level(memory: Memory) -> None:
    ctx, hits = _search(memory, {"mode": "traversal", "beam": 1, "theta_retrieve": -1.0}, 50)
    tree = tree_cache(ctx).get("default")
    chosen = [h.id if h.kind == "tree_node" else None for h in hits]
    nodes = [n for n in chosen if n is not None]
    # beam 1: one node per level, each the child of the one above, so a single path.
    depths = sorted(tree.nodes[n].depth for n in nodes)
    assert len(set(depths)) == len(depths)
    by_depth = {tree.nodes[n].depth: n for n in nodes}
    for d, n in by_depth.items():
        if d > 1 and d - 1 in by_depth:
            assert tree.nodes[n].parent_id == by_depth[d - 1]
    _, collapsed = _search(memory, {"theta_retrieve": -1.0}, 50)
    assert len(hits) < len(collapsed)  # traversal narrows the search space


def test_traversal_takes_k_picks_from_the_levels_in_turn(memory: Memory) -> None:
    """``k`` hits in all (a search's ``k`` counts every hit), taken from the levels in
    turn, so the top level does not crowd out the ones beneath it."""
    ctx, hits = _search(memory, {"mode": "traversal", "beam": 3, "theta_retrieve": -1.0}, 4)
    tree = tree_cache(ctx).get("default")

    def depth(h) -> int:  # type: ignore[no-untyped-def]
        if h.kind == "tree_node":
            return tree.nodes[h.id].depth
        leaf = next(n for n in tree.leaves() if tree.nodes[n].sources[0].episode == h.id)
        return tree.nodes[leaf].depth

    depths = [depth(h) for h in hits]
    assert len(hits) == 4 and len(set(depths)) >= 2, depths
    levels = len(set(depths))
    assert len(set(depths[:levels])) == levels  # each level's best before any second
    for d in set(depths):  # each level best first
        scores = [h.score for h, at in zip(hits, depths, strict=True) if at == d]
        assert scores == sorted(scores, reverse=True)
    result = memory.search(QUERY, k=4, max_tokens=None, recipe="memtree-traversal")
    assert len(result.hits) == 4


def test_inner_hits_cite_the_episodes_their_match_rests_on_best_first(
    memory: Memory, embedder
) -> None:
    """A summary cites the episodes beneath it whose leaf matches the query at least as
    well as the summary does (at least its best one), best first: not every episode it
    sits above, which would fill K and rank the tree below its own leaves."""
    ctx, hits = _search(memory, {"theta_retrieve": -1.0, "bm25_weight": 0}, 30)
    tree = tree_cache(ctx).get("default")
    inner = [h for h in hits if h.kind == "tree_node"]
    assert inner
    q = np.asarray(embedder.embed([QUERY])[0], dtype=np.float32)
    q = q / np.linalg.norm(q)
    narrowed = 0
    for h in inner:
        leaves = tree.leaves_under(h.id)
        sim: dict[str, float] = {}
        for n in leaves:
            e = tree.nodes[n].sources[0].episode
            sim[e] = max(sim.get(e, -2.0), float(tree.vecs[n] @ q))
        own = float(tree.vecs[h.id] @ q)
        wanted = sorted((e for e in sim if sim[e] >= own - 1e-6), key=lambda e: -sim[e])
        best = max(sim, key=lambda e: sim[e])
        assert h.sources == (wanted or [best]) or set(h.sources) == set(wanted)
        assert [sim[e] for e in h.sources] == sorted((sim[e] for e in h.sources), reverse=True)
        assert h.text == tree.nodes[h.id].content and h.metadata["leaves"] == len(leaves)
        narrowed += len(h.sources) < len(sim)
    assert narrowed  # some summary sits above more episodes than it cites
    for h in hits:
        if h.kind == "episode":
            assert h.sources == [h.id] and h.spans and h.spans[0].episode == h.id


ITEMS = ["a blue lamp", "two garden chairs", "a kettle", "a rug", "a desk", "a bookshelf"]
ITEMS += ["a mirror", "three pillows", "a toaster", "a bike pump", "a coffee grinder", "a tent"]
NUMBERS = [5521, 6630, 7142, 8804, 9317, 1268, 2475, 3389, 4096, 5813, 6957, 7704]


def _sources(m: Memory, query: str, weight: float) -> list[str]:
    route = MemTreeRoute(MemTreeRouteParams(bm25_weight=weight))
    (hits,) = asyncio.run(route.search(m.engine.base, "default", [query], 3))
    return [e for h in hits for e in h.sources]


def test_collapsed_search_ranks_by_words_as_well_as_meaning(tmp_path: Path, embedder) -> None:
    """Twelve turns alike but for an order number: MiniLM's cosine does not tell the
    numbers apart, the BM25 ranking fused with it does (the default); ``bm25_weight = 0``
    is the paper's cosine alone and misses the turn. A node written later is in the
    lexical index at the next search."""
    orders = [
        {"id": f"o{i}", "text": f"Order {n} arrived today, it was {item}.", "speaker": "Ana"}
        for i, (n, item) in enumerate(zip(NUMBERS, ITEMS, strict=True))
    ]
    with Memory.open(
        tmp_path / "m.db", embedder=embedder, recipe="memtree", **{"build.mode": "manual"}
    ) as m:
        m.add_many(orders)
        m.build()
        assert "o7" not in _sources(m, "What was order 3389?", 0.0)
        assert "o7" in _sources(m, "What was order 3389?", 1.0)
        m.add_many([{"id": "late", "text": "Order 4242 arrived, a lantern.", "speaker": "Ana"}])
        m.build()
        assert "late" in _sources(m, "What was order 4242?", 1.0)
        result = m.search("What was order 3389?", k=3)  # the recipe's default
    assert "o7" in [e for h in result.hits for e in h.sources]


def test_recipes_search_and_show(memory: Memory) -> None:
    names = {r["name"] for r in memory.recipes()}
    assert {"memtree", "memtree-traversal"} <= names
    r = memory.search(QUERY, k=4, max_tokens=None)
    assert r.hits and r.pending == 0 and all(h.sources for h in r.hits)
    assert any("Lisbon" in h.text for h in r.hits)
    t = memory.search(QUERY, k=4, max_tokens=None, recipe="memtree-traversal")
    assert t.hits
    (root,) = memory.show("root")
    assert root.text.startswith("root ") and root.children
    ctx = memory.engine.base
    child = root.children[0].text.split()[1]
    (sub,) = show(ctx, "default", child) or []
    assert sub.text.split()[1] == child and "depth 1" in sub.text
    assert show(ctx, "default", "no-such-node") is None


def test_a_hit_on_a_chunk_of_a_long_episode_reads_as_that_chunk(tmp_path: Path, embedder) -> None:
    topics = ["the garden", "a train timetable", "the rent", "a chess club", "the weather"]
    filler = [f"Line {i} is about {topics[i % 5]} and nothing else." for i in range(1500)]
    filler[900] = "Maya keeps her passport in the blue drawer of the hall desk."
    long_text = " ".join(filler)
    assert len(long_text) > 60_000
    with Memory.open(
        tmp_path / "m.db", embedder=embedder, recipe="memtree", **{"build.mode": "manual"}
    ) as m:
        m.add_many([{"id": "long", "text": long_text, "speaker": "Ana"}])
        m.build()
        result = m.search("Where does Maya keep her passport?", k=3)  # the default budget
    (hit,) = [h for h in result.hits if h.kind == "episode" and h.id == "long"]
    assert "blue drawer" in hit.text and len(hit.text) < 5_000
    assert hit.text.startswith("Ana: …") and hit.text.endswith("…")
    (span,) = hit.spans
    assert long_text[span.start : span.end] in hit.text
    assert "blue drawer" in result.context  # it reached the context, not dropped for size
