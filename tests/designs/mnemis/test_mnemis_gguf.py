"""The Mnemis ``llm`` tier through the real bundled GGUF model (SmolLM2-135M), end to end:
base graph, hierarchy with the appendix D prompt, then a search with LLM Global
Selection and the LLM reranker. A 135M model writes poor structures; what is checked
is that every stage runs, failures are counted, and the structures stay valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.designs.mnemis.graph import Graph
from memstrata.designs.mnemis.hierarchy import hierarchy_problems
from memstrata.memory import Memory

pytestmark = pytest.mark.slow


def test_llm_tier_builds_and_searches_with_smollm2(tmp_path: Path, embedder, sample) -> None:
    with Memory.open(tmp_path / "m.db", embedder=embedder, llm={"kind": "gguf"}) as m:
        m.add_many(sample[:2])
        (report,) = m.build(recipe="mnemis", tier="llm")
        assert report.tier == "llm" and report.details["hierarchy"] == "built"
        assert report.episodes == 2
        usage = m.stats()["llm"]
        for stage in ("entities", "entities_reflect", "attributes", "hierarchy"):
            assert usage[f"mnemis.{stage}"]["calls"] >= 1, stage
        assert report.llm_failures == sum(u["failures"] for u in report.llm.values())
        graph = Graph.load(m.store, embedder, "default")
        assert len(graph.entities) >= 2  # the two speakers at least
        assert hierarchy_problems(graph) == []
        assert all(e.sources for e in graph.entities.values())
        r = m.search("Where is the conference?", recipe="mnemis", k=2, max_tokens=None)
        assert [h.kind for h in r.hits[:2]] == ["episode", "episode"]
        assert all(h.sources for h in r.hits)
        usage = m.stats()["llm"]
    assert usage["mnemis.select"]["calls"] >= 1
    assert usage["mnemis.rerank"]["calls"] >= 1
