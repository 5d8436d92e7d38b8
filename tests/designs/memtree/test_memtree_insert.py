"""MemTree insertion (Algorithm 1) and the heuristic tier: thresholds, descent, expansion,
new leaves, ancestor updates, the extractive aggregate, invariants and resumability."""

from __future__ import annotations

import asyncio
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memtree_helpers import NS, add_episodes, axis, hand_tree, set_vectors

from memstrata.designs.memtree.aggregate import budget, extractive_aggregate
from memstrata.designs.memtree.builder import MemTreeBuilder, MemTreeParams, apply, plan
from memstrata.designs.memtree.tree import Tree, threshold, tree_problems
from memstrata.engine.contracts import Context
from memstrata.models import Span
from memstrata.retrieval.text import sentences
from memstrata.store import SQLiteStore

P = MemTreeParams()
SPAN = Span(episode="leaf-0", start=0, end=3)


def test_threshold_grows_with_depth_from_theta0() -> None:
    assert threshold(0, 4, 0.4, 0.5) == pytest.approx(0.4)
    assert threshold(4, 4, 0.4, 0.5) == pytest.approx(0.4 * math.exp(0.5))
    assert threshold(2, 4, 0.4, 0.5) == pytest.approx(0.4 * math.exp(0.25))
    values = [threshold(d, 6, 0.4, 0.5) for d in range(7)]
    assert values == sorted(values) and len(set(values)) == 7
    assert threshold(1, 0, 0.4, 0.5) == threshold(1, 1, 0.4, 0.5)  # max_depth at least 1


def test_descends_into_the_most_similar_passing_child(store: SQLiteStore, embedder) -> None:
    # root -> A (inner: a1, a2), B (leaf); the new content is closest to A, then to a2.
    tree = hand_tree(store, embedder, {"r": None, "A": "r", "a1": "A", "a2": "A", "B": "r"})
    d = embedder.dim
    new = axis(0, d, {1: 0.5})
    set_vectors(
        tree,
        {"A": axis(0, d), "B": axis(0, d, {2: 1.5}), "a1": axis(3, d), "a2": axis(0, d, {1: 1.0})},
        new,
    )
    ins = plan(tree, "new", SPAN, P)
    assert ins.path == ["A", "a2"] and ins.expand
    assert [t[0] for t in ins.targets] == ["A", "a2"]
    assert [t[2] for t in ins.targets] == [2, 1]  # n: leaves beneath before the insertion


def test_a_passing_child_that_is_not_the_best_is_not_taken(store: SQLiteStore, embedder) -> None:
    tree = hand_tree(store, embedder, {"r": None, "A": "r", "a1": "A", "a2": "A", "B": "r"})
    d = embedder.dim
    # Both pass θ(0) = 0.4; B is the more similar one.
    set_vectors(
        tree,
        {"A": axis(0, d, {1: 1.2}), "B": axis(0, d, {1: 0.2}), "a1": axis(5, d), "a2": axis(6, d)},
        axis(0, d),
    )
    ins = plan(tree, "new", SPAN, P)
    assert ins.path == ["B"] and ins.expand


def test_leaf_expansion_puts_an_inner_node_in_the_leafs_place(store: SQLiteStore, embedder) -> None:
    tree = hand_tree(store, embedder, {"r": None, "A": "r", "a1": "A", "a2": "A", "B": "r"})
    d = embedder.dim
    set_vectors(
        tree, {"A": axis(1, d), "B": axis(0, d), "a1": axis(1, d), "a2": axis(2, d)}, axis(0, d)
    )
    add_episodes(store, ["the new one"], prefix="new-")
    span = Span(episode="new-0", start=0, end=11)
    ins = plan(tree, "the new one", span, P)
    assert ins.path == ["B"] and ins.expand
    leaf = apply(tree, ins, ["B merged with the new one"])
    inner = tree.nodes["B"].parent_id
    assert inner is not None and inner != "r"
    assert tree.nodes[inner].parent_id == "r" and tree.nodes[inner].depth == 1
    assert tree.children["r"] == ["A", inner]  # in B's place
    assert tree.children[inner] == ["B", leaf]
    assert tree.nodes["B"].depth == 2 and tree.nodes[leaf].depth == 2
    assert tree.nodes[inner].content == "B merged with the new one"
    assert set(tree.spans_under(inner)) == {tree.nodes["B"].sources[0], span}
    assert tree.nodes[inner].sources == [] and tree.descendants(inner) == 2
    assert tree.max_depth == 2
    assert tree_problems(tree) == []


def test_a_new_leaf_goes_under_the_current_node_when_no_child_passes(
    store: SQLiteStore, embedder
) -> None:
    tree = hand_tree(store, embedder, {"r": None, "A": "r", "a1": "A", "a2": "A", "B": "r"})
    d = embedder.dim
    vecs = {"A": axis(0, d), "B": axis(1, d), "a1": axis(2, d), "a2": axis(3, d)}
    set_vectors(tree, vecs, axis(0, d, {4: 2.0}))  # cos 0.45 to A only; a1, a2: 0
    add_episodes(store, ["x"], prefix="new-")
    ins = plan(tree, "x", Span(episode="new-0", start=0, end=1), P)
    assert ins.path == ["A"] and not ins.expand
    leaf = apply(tree, ins, ["A updated"])
    assert tree.nodes[leaf].parent_id == "A" and tree.children["A"] == ["a1", "a2", leaf]
    # Nothing passes at the root: a new leaf directly under it.
    set_vectors(tree, {}, axis(7, d))
    add_episodes(store, ["y"], prefix="other-")
    ins = plan(tree, "y", Span(episode="other-0", start=0, end=1), P)
    assert ins.path == [] and ins.targets == []
    leaf2 = apply(tree, ins, [])
    assert tree.nodes[leaf2].parent_id == "r" and tree.nodes[leaf2].depth == 1
    assert tree_problems(tree) == []


def test_only_ancestors_on_the_path_are_updated(store: SQLiteStore, embedder) -> None:
    shape = {"r": None, "A": "r", "a1": "A", "A2": "A", "x": "A2", "y": "A2", "B": "r", "b": "B"}
    shape |= {"b2": "B"}
    tree = hand_tree(store, embedder, shape)
    d = embedder.dim
    vecs = {n: axis(i + 1, d) for i, n in enumerate(shape) if n != "r"}
    vecs |= {"A": axis(0, d, {1: 0.5}), "A2": axis(0, d, {2: 0.3}), "y": axis(0, d, {3: 0.2})}
    set_vectors(tree, vecs, axis(0, d))
    before = {n: (node.content, tree.count[n]) for n, node in tree.nodes.items()}
    add_episodes(store, ["z"], prefix="new-")
    ins = plan(tree, "z", Span(episode="new-0", start=0, end=1), P)
    assert ins.path == ["A", "A2", "y"] and ins.expand
    apply(tree, ins, ["new A", "new A2", "new y-parent"])
    changed = {n for n in before if (tree.nodes[n].content, tree.count[n]) != before[n]}
    # y kept its content (its new parent got it); the root's content stays empty, its
    # leaf count grows.
    assert changed == {"r", "A", "A2"}
    assert tree.nodes[tree.nodes["y"].parent_id or ""].content == "new y-parent"
    assert tree_problems(tree) == []


def test_extractive_aggregate_gets_shorter_as_descendants_grow(embedder) -> None:
    text = (
        "Maya booked flights to Lisbon. The conference is in June. She will talk about "
        "streaming pipelines. Tomas asked about sensor data. The hotel is near the river. "
        "They plan a dinner after the talk. Her manager approved the budget. The slides "
        "are due in May."
    )
    new = "Maya also wants to visit Porto after the conference."

    def embed(texts):
        import numpy as np

        return np.asarray(embedder.embed(list(texts)), dtype=np.float32)

    lengths = []
    for n in (2, 4, 16, 64):
        out = extractive_aggregate(text, new, n, 6, embed)
        lengths.append(len(sentences(out)))
        assert len(sentences(out)) == min(budget(n, 6), 9)
        assert out and all(s in text + " " + new for s in out.split(". "))
    assert lengths == sorted(lengths, reverse=True) and lengths[0] > lengths[-1] == 1
    assert "Porto" in extractive_aggregate(text, new, 4, 6, embed)  # new content kept


async def _build(ctx: Context, episodes, params: MemTreeParams | None = None) -> None:
    builder = MemTreeBuilder(params)
    result = await builder.update(ctx, NS, episodes)
    assert result.failed == {}


def _check(store: SQLiteStore, embedder, episode_ids: list[str]) -> Tree:
    tree = Tree.load(store, embedder, NS)
    assert tree_problems(tree) == []
    leaf_eps = [tree.nodes[n].sources[0].episode for n in tree.leaves()]
    assert sorted(leaf_eps) == sorted(episode_ids)  # every episode a leaf, exactly once
    for nid, node in tree.nodes.items():
        if node.parent_id is not None:
            assert node.depth == tree.nodes[node.parent_id].depth + 1, nid
    return tree


WORDS = "basil mint cat dog flight lisbon porto train budget talk river hotel music jazz".split()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(st.sampled_from(WORDS), min_size=2, max_size=6), min_size=1, max_size=14),
    st.sampled_from([0.1, 0.4, 0.8]),
)
def test_random_insertions_keep_the_tree_valid(embedder, texts, theta0) -> None:
    store = SQLiteStore(":memory:")
    eps = add_episodes(store, [" ".join(t) + "." for t in texts])
    ctx = Context(store, embedder)
    asyncio.run(_build(ctx, eps[: len(eps) // 2 + 1], MemTreeParams(theta0=theta0)))
    asyncio.run(_build(ctx, eps[len(eps) // 2 + 1 :], MemTreeParams(theta0=theta0)))
    _check(store, embedder, [e.id for e in eps])


def test_a_build_resumes_from_the_store(store: SQLiteStore, embedder, sample) -> None:
    eps = add_episodes(store, [row["text"] for row in sample], speaker="Maya")
    asyncio.run(_build(Context(store, embedder), eps[:16]))
    assert len(store.pending_episodes(NS, "memtree", 100, 0)) == len(eps) - 16
    # Another process (a fresh context and cache) folds in the rest.
    asyncio.run(_build(Context(store, embedder), eps[16:]))
    assert store.pending_episodes(NS, "memtree", 100, 0) == []
    tree = _check(store, embedder, [e.id for e in eps])
    assert tree.max_depth >= 2 and tree.inner()
    assert all(tree.nodes[n].content.startswith("Maya: ") for n in tree.leaves())


def test_long_episodes_become_one_leaf_per_chunk(store: SQLiteStore, embedder) -> None:
    long = " ".join(f"Sentence number {i} is about topic {i % 5}." for i in range(60))
    eps = add_episodes(store, [long, "A short one about topic 3."])
    asyncio.run(_build(Context(store, embedder), eps, MemTreeParams(max_leaf_tokens=64)))
    tree = Tree.load(store, embedder, NS)
    assert tree_problems(tree) == []
    spans = sorted(
        (
            tree.nodes[n].sources[0]
            for n in tree.leaves()
            if tree.nodes[n].sources[0].episode == "e0"
        ),
        key=lambda s: s.start,
    )
    assert len(spans) > 3
    assert all(tree.nodes[tree.leaf_of[s]].content == long[s.start : s.end] for s in spans)
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:], strict=False))


def test_deleting_an_episode_removes_its_leaf_and_keeps_the_tree_valid(tmp_path, embedder, sample):
    from memstrata.memory import Memory

    with Memory.open(
        tmp_path / "m.db", embedder=embedder, recipe="memtree", **{"build.mode": "manual"}
    ) as m:
        m.add_many(sample[:12])
        m.build()
        m.delete(["t03"])
        tree = Tree.load(m.store, embedder, "default")
        assert tree_problems(tree) == []
        eps = sorted(tree.nodes[n].sources[0].episode for n in tree.leaves())
        assert eps == sorted(r["id"] for r in sample[:12] if r["id"] != "t03")


def test_inner_nodes_hold_no_spans_and_empty_ones_are_pruned(tmp_path, embedder, sample):
    from memstrata.memory import Memory

    with Memory.open(
        tmp_path / "m.db", embedder=embedder, recipe="memtree", **{"build.mode": "manual"}
    ) as m:
        m.add_many(sample[:16])
        m.build()
        tree = Tree.load(m.store, embedder, "default")
        # Provenance rows: one per leaf, none for inner nodes, so an insertion under a
        # node with many leaves does not rewrite them.
        rows = m.store._conn.execute("SELECT COUNT(*) FROM provenance").fetchone()[0]
        assert rows == len(tree.leaves()) and all(not tree.nodes[n].sources for n in tree.inner())
        inner = max(tree.inner(), key=lambda n: tree.nodes[n].depth)
        gone = sorted({tree.nodes[leaf].sources[0].episode for leaf in tree.leaves_under(inner)})
        m.delete(gone)
        after = Tree.load(m.store, embedder, "default")
        assert inner not in after.nodes and tree_problems(after) == []
        assert sum(after.count[c] for c in after.children[after.root_id or ""]) == 16 - len(gone)
        m.add_many(sample[16:18])
        m.build()
        stored = {r.id for r in m.store.get_records("default", "tree_node", builder=None)}
        assert inner not in stored
        assert tree_problems(Tree.load(m.store, embedder, "default")) == []
