"""The MemTree ``llm`` tier through the real bundled GGUF model, end to end: eight
episodes folded in with the A.1.2 aggregate prompt, then a collapsed-tree search. A
small model writes poor summaries; what is checked is that every aggregate runs, is
counted, and leaves a valid tree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memstrata.designs.memtree.tree import Tree, tree_problems
from memstrata.memory import Memory

pytestmark = pytest.mark.slow


def test_llm_tier_builds_a_tree_with_the_gguf_model(tmp_path: Path, embedder, sample) -> None:
    with Memory.open(
        tmp_path / "m.db",
        embedder=embedder,
        llm={"kind": "gguf"},
        recipe="memtree",
        **{"build.mode": "manual"},
    ) as m:
        m.add_many(sample[:8])
        (report,) = m.build(tier="llm")
        assert report.tier == "llm" and report.episodes == 8
        tree = Tree.load(m.store, embedder, "default")
        assert tree_problems(tree) == []
        done = {tree.nodes[n].sources[0].episode for n in tree.leaves()}
        assert len(done) == 8 - report.failed
        assert tree.inner(), "eight related turns should share at least one parent"
        assert all(tree.nodes[n].content.strip() for n in tree.inner())
        usage = m.stats()["llm"]
        # One aggregate per ancestor on each insertion's path, each one LLM call (more
        # when a malformed answer is retried); every inner node was aggregated at least once.
        assert report.work["insertions"] == 8 - report.failed
        assert usage["memtree.aggregate"]["calls"] >= report.work["aggregates"] >= len(tree.inner())
        r = m.search("Where is the conference?", k=3, max_tokens=None)
        assert r.hits and all(h.sources for h in r.hits)
        # The answer stage is the paper's A.2.2 prompt, asked once over the hits.
        answer = m.ask("Where is the conference?", k=3)
        assert m.stats()["llm"]["memtree.answer"]["calls"] == 1
        assert answer.text.strip() and answer.hits
        if not answer.abstained:
            assert set(answer.sources) <= {s for h in answer.hits for s in h.sources}


def test_a_delete_re_aggregates_the_ancestors_with_the_gguf_model(
    tmp_path: Path, embedder, sample
) -> None:
    """The repair after a delete goes through the model: an ancestor of the removed leaf
    with children left is aggregated again from them, and no ancestor keeps a word that
    only the removed turn had."""
    deep = {  # θ = 0: every insertion descends as deep as the tree goes, a chain
        "builders": [{"name": "memtree", "params": {"theta0": 0.0, "rate": 0.0}}],
        "routes": [{"name": "memtree"}],
    }
    with Memory.open(
        tmp_path / "m.db",
        embedder=embedder,
        llm={"kind": "gguf"},
        recipe="deep",
        recipes={"deep": deep},
        **{"build.mode": "manual"},
    ) as m:
        m.add_many(sample[:4])
        (report,) = m.build(tier="llm")
        assert report.failed == 0
        tree = Tree.load(m.store, embedder, "default")
        # a leaf two levels under an inner node that has another child besides
        leaf = next(
            n
            for n in sorted(tree.leaves(), key=lambda n: tree.nodes[n].depth)
            if len(tree.ancestors(tree.nodes[n].parent_id)) >= 2
        )
        gone = tree.nodes[leaf].sources[0].episode
        above = tree.ancestors(tree.nodes[leaf].parent_id)
        calls = m.stats()["llm"]["memtree.aggregate"]["calls"]
        assert m.delete([gone]) == 1

        after = Tree.load(m.store, embedder, "default")
        assert tree_problems(after) == [] and len(after.leaves()) == len(tree.leaves()) - 1
        assert m.stats("default")["namespaces"][0]["repairs"] == {}
        assert m.stats()["llm"]["memtree.aggregate"]["calls"] > calls  # through the model
        left = " ".join(t["text"] for t in sample[:4] if t["id"] != gone).lower()
        (text,) = [t["text"] for t in sample[:4] if t["id"] == gone]
        only = {w for w in re.findall(r"[a-z]{5,}", text.lower()) if w not in left}
        assert only
        for a in above:
            if a in after.nodes:
                assert not only & set(re.findall(r"[a-z]{5,}", after.nodes[a].content.lower()))
