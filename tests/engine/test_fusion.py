"""Fusion of several routes' hits: weighted RRF per kind, merging, budgets, reranking."""

from __future__ import annotations

import asyncio

import pytest

from memstrata.engine.fusion import cut, fuse, merge, rerank
from memstrata.engine.recipe import FusionSpec
from memstrata.models import Hit


def hit(kind: str, id: str, *sources: str) -> Hit:
    return Hit(kind=kind, id=id, text=f"{kind} {id}", score=0.0, sources=list(sources) or [id])


def test_one_route_keeps_its_order_and_records_ranks() -> None:
    hits = [hit("episode", e) for e in ("c", "a", "b")]
    out = fuse([("only", 1.0, hits)], FusionSpec(), k=10)
    assert [h.id for h in out] == ["c", "a", "b"]
    assert [h.ranks for h in out] == [{"only": 1}, {"only": 2}, {"only": 3}]
    assert out[0].score > out[1].score > out[2].score
    assert out[0] is hits[0]  # updated in place: routes hand over fresh hits


def test_two_routes_fuse_by_weighted_rrf_and_merge_duplicates() -> None:
    a = [hit("episode", "x", "e1"), hit("episode", "y", "e2")]
    b = [hit("episode", "y", "e2", "e9"), hit("episode", "z", "e3")]
    spec = FusionSpec(rrf_k=1)
    out = fuse([("a", 1.0, a), ("b", 1.0, b)], spec, k=10)
    assert [h.id for h in out] == ["y", "x", "z"]  # y: 1/3 + 1/2 beats x: 1/2
    y = out[0]
    assert y.ranks == {"a": 2, "b": 1} and y.sources == ["e2", "e9"]
    assert y.score == pytest.approx(1 / 3 + 1 / 2, abs=1e-6)
    # a heavier weight on route a puts its first hit on top
    out = fuse([("a", 3.0, a), ("b", 1.0, b)], spec, k=10)
    assert [h.id for h in out] == ["x", "y", "z"]
    # a zero-weight route contributes nothing but keeps its hits after the others
    out = fuse([("a", 1.0, a), ("b", 0.0, b)], spec, k=10)
    assert [h.id for h in out] == ["x", "y", "z"] and out[2].score == 0.0


def test_k_is_every_hit_and_the_budgets_share_it() -> None:
    hits = [hit("fact", f"f{i}") for i in range(9)] + [hit("episode", f"e{i}") for i in range(9)]
    spec = FusionSpec(kind_order=["episode", "fact"], budgets={"episode": 1, "fact": 2})
    out = fuse([("r", 1.0, hits)], spec, k=9)
    assert [h.id for h in out] == ["e0", "e1", "e2"] + [f"f{i}" for i in range(6)]
    out = fuse([("r", 1.0, [hit(h.kind, h.id) for h in hits])], spec, k=4)
    # facts stand at 0.5, 1, 1.5 ...; episodes at 1, 2 ...; a tie goes to kind order
    assert [h.id for h in out] == ["e0", "f0", "f1", "f2"]
    spec = FusionSpec(kind_order=["fact"], budgets={"episode": 0.5})
    out = fuse([("r", 1.0, [hit(h.kind, h.id) for h in hits])], spec, k=6)
    assert [h.kind for h in out] == ["fact"] * 4 + ["episode"] * 2
    # a kind short of its share leaves its places to the others
    few = [hit("fact", "f0")] + [hit("episode", f"e{i}") for i in range(9)]
    spec = FusionSpec(budgets={"fact": 5})
    assert [h.id for h in fuse([("r", 1.0, few)], spec, k=4)] == ["e0", "e1", "e2", "f0"]
    # a zero share leaves the kind out; "routes" is a share of 1
    assert FusionSpec(budgets={"fact": 0}).share("fact") == 0.0
    assert FusionSpec(budgets={"episode": "routes"}).share("episode") == 1.0
    spec = FusionSpec(budgets={"fact": 0})
    assert {h.kind for h in fuse([("r", 1.0, [hit(h.kind, h.id) for h in hits])], spec, 9)} == {
        "episode"
    }
    assert FusionSpec(budgets={"episode": 1, "fact": 2, "entity": 2}).total(10) == 50


def test_mixed_order_interleaves_kinds_by_one_ranking() -> None:
    one = [hit("tree_node", "n1"), hit("episode", "e1"), hit("tree_node", "n2")]
    out = fuse([("tree", 1.0, one)], FusionSpec(order="mixed"), k=10)
    assert [(h.kind, h.id) for h in out] == [
        ("tree_node", "n1"),
        ("episode", "e1"),
        ("tree_node", "n2"),
    ]
    assert [h.ranks for h in out] == [{"tree": 1}, {"tree": 2}, {"tree": 3}]
    # Grouped by kind (the default), the episode would come first.
    grouped = fuse([("tree", 1.0, [hit(h.kind, h.id) for h in one])], FusionSpec(), k=10)
    assert grouped[0].kind == "episode"
    # the first k of that one ranking
    cut = fuse([("tree", 1.0, [hit(h.kind, h.id) for h in one])], FusionSpec(order="mixed"), k=2)
    assert [h.id for h in cut] == ["n1", "e1"]
    # Two routes: one RRF over whole lists; a kind shared by id merges; shares weigh the
    # ranking's places (a tree node at place 2 of share 0.5 stands at 4)
    other = [hit("episode", "e1", "e1", "e7"), hit("episode", "e2")]
    spec = FusionSpec(order="mixed", rrf_k=1, budgets={"tree_node": 0.5})
    out = fuse([("tree", 1.0, [hit(h.kind, h.id) for h in one]), ("s1", 1.0, other)], spec, k=2)
    assert [(h.kind, h.id) for h in out] == [("episode", "e1"), ("episode", "e2")]
    assert out[0].sources == ["e1", "e7"] and out[0].ranks == {"tree": 2, "s1": 1}


def test_rerank_changes_what_the_cut_keeps() -> None:
    hits = [hit("episode", f"e{i}") for i in range(6)]
    spec = FusionSpec()
    merged = merge([("r", 1.0, hits)], spec)
    seen: list[tuple[str, str, list[str]]] = []

    async def reverse(query: str, kind: str, texts: list[str]) -> list[int]:
        seen.append((query, kind, texts))
        return [3, 99, 3, 2]  # out-of-range and repeated indexes are ignored

    out = cut(asyncio.run(rerank("q", merged, spec, 2, reverse)), spec, 2)
    # the window is twice the budget (4 items); the reranker's order wins inside it
    assert seen == [("q", "episode", ["episode e0", "episode e1", "episode e2", "episode e3"])]
    assert [h.id for h in out] == ["e3", "e2"]
