"""MemTree after a delete: every ancestor of the removed leaves is re-derived from the
children it has left, on both tiers; nodes left without leaves go; the tree stays valid."""

from __future__ import annotations

import asyncio
import json
import re

from memtree_helpers import NS, add_episodes

from memstrata.designs.memtree.builder import MemTreeBuilder, MemTreeParams
from memstrata.designs.memtree.tree import Tree, tree_problems
from memstrata.engine.contracts import Context
from memstrata.llm import LLMClient
from memstrata.llm.scripted import ScriptedBackend
from memstrata.llm.types import Message
from memstrata.store import SQLiteStore

# θ = 0 at every depth: every insertion descends as deep as the tree goes (one chain);
DEEP = MemTreeParams(theta0=0.0, rate=0.0, summary_sentences=20)  # keeps every sentence
TEXTS = [
    "Maya booked flights to Lisbon for the conference.",
    "Maya's cousin Zebulon keeps a ferret called Quillfeather.",
    "Maya will present sensor data pipelines at the Lisbon conference.",
    "Maya's Lisbon conference slides are due in May.",
]


def build(store: SQLiteStore, embedder, ctx: Context | None = None) -> Context:
    eps = add_episodes(store, TEXTS)
    ctx = ctx or Context(store, embedder)
    assert asyncio.run(MemTreeBuilder(DEEP).update(ctx, NS, eps)).failed == {}
    return ctx


def inner_texts(store: SQLiteStore, embedder) -> list[str]:
    tree = Tree.load(store, embedder, NS)
    assert tree_problems(tree) == []
    return [tree.nodes[n].content for n in tree.inner()]


def test_heuristic_repair_rederives_every_ancestor(embedder) -> None:
    store = SQLiteStore(":memory:")
    ctx = build(store, embedder)
    assert any("Quillfeather" in t for t in inner_texts(store, embedder))
    store.delete_episodes(NS, ["e1"])
    work = store.pending_repairs(NS, "memtree")
    assert [e.id for e in work.episodes] == ["e1"] and work.dropped  # the leaf
    asyncio.run(MemTreeBuilder(DEEP).repair(ctx, NS, work))

    tree = Tree.load(store, embedder, NS)
    assert tree_problems(tree) == [] and len(tree.leaves()) == 3
    kept = [TEXTS[0], TEXTS[2], TEXTS[3]]
    for nid in tree.inner():
        text = tree.nodes[nid].content
        assert "Quillfeather" not in text and "Zebulon" not in text
        assert text and all(sentence in kept for sentence in re.split(r"(?<=\.) ", text))


def echo(messages: list[Message]) -> str:
    """An aggregate that repeats both inputs, so the test sees what the model was given."""
    user = messages[-1].content
    new = user.split("[New Information]\n", 1)[1].split("\n\n[Existing", 1)[0]
    old = user.split("previous entries)]\n", 1)[1].split("\n\n[Output", 1)[0]
    return json.dumps({"summary": f"{old} | {new}"})


def test_llm_repair_aggregates_the_remaining_children(embedder) -> None:
    store = SQLiteStore(":memory:")
    backend = ScriptedBackend([echo] * 40)
    ctx = build(store, embedder, Context(store, embedder, LLMClient(backend), "llm"))
    built = len(backend.requests)
    assert any("sensor data" in t for t in inner_texts(store, embedder))
    store.delete_episodes(NS, ["e2"])
    asyncio.run(MemTreeBuilder(DEEP).repair(ctx, NS, store.pending_repairs(NS, "memtree")))

    # e2's parent keeps one child and takes its content; the node above it has two
    # children left, whose contents go through the aggregate prompt again
    repaired = backend.requests[built:]
    assert len(repaired) == 1
    assert "[Output Summary]" in repaired[0].messages[-1].content
    assert "sensor data" not in repaired[0].messages[-1].content
    texts = inner_texts(store, embedder)
    assert texts and not any("sensor data" in t for t in texts)
    assert any("Quillfeather" in t for t in texts) and any(TEXTS[3] in t for t in texts)


def test_a_subtree_left_without_leaves_goes(embedder) -> None:
    store = SQLiteStore(":memory:")
    ctx = build(store, embedder)
    store.delete_episodes(NS, ["e0", "e1", "e2", "e3"])
    asyncio.run(MemTreeBuilder(DEEP).repair(ctx, NS, store.pending_repairs(NS, "memtree")))
    left = store.get_records(NS, "tree_node", builder="memtree")
    assert [n.parent_id for n in left] == [None]  # the structural root alone
