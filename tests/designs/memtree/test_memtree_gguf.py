"""The MemTree ``llm`` tier through the real bundled GGUF model, end to end: eight
episodes folded in with the A.1.2 aggregate prompt, then a collapsed-tree search. A
small model writes poor summaries; what is checked is that every aggregate runs, is
counted, and leaves a valid tree."""

from __future__ import annotations

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
