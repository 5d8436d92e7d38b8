"""The PersonalAI ``llm`` tier through the real bundled GGUF model (SmolLM2-135M), end to
end on five short passages (one updating another): appendix A extraction, the
outdated-knowledge step, the appendix C entity parser and QA generator. A 135M model
extracts poorly; what is checked is that every stage runs and is counted, what it built
rests on its sources, and the search and the answer work on it. The 40-passage run of
the figures is in docs/personalai.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.designs.personalai.graph import PAGraph
from memstrata.designs.personalai.prompts import TRIPLET_WORDS
from memstrata.memory import Memory

pytestmark = pytest.mark.slow

FACTS = [
    "Maya works as a data engineer at Acme.",
    "Tomas is a friend of Maya.",
    "Acme is a company based in Berlin.",
    "The conference on data engineering takes place in Lisbon in June.",
    "Maya now works at Globex.",
]


def test_llm_tier_end_to_end(tmp_path: Path, embedder) -> None:
    passages = [{"id": f"f{i}", "text": t} for i, t in enumerate(FACTS)]
    recipes = {
        "pai-gguf": {
            "builders": [{"name": "personalai", "params": {"max_tokens": 64}}],
            "routes": [{"name": "personalai", "params": {"retrievers": ["beam", "watercircles"]}}],
            "fusion": {"kind_order": ["episode", "thesis", "fact"]},
            "answerer": {"name": "personalai-qa", "params": {"max_tokens": 64}},
        }
    }
    with Memory.open(
        tmp_path / "m.db",
        embedder=embedder,
        llm={"kind": "gguf"},
        recipe="pai-gguf",
        recipes=recipes,
        **{"build.mode": "manual"},
    ) as m:
        m.add_many(passages)
        (report,) = m.build(tier="llm")
        n = len(passages)
        assert report.tier == "llm" and report.episodes == n
        usage = m.stats()["llm"]
        assert usage["personalai.theses"]["calls"] >= n - report.failed
        assert usage["personalai.triplets"]["calls"] >= n - report.failed
        assert report.failed < n
        graph = PAGraph.load(m.store, embedder, "default")
        assert graph.objects and (graph.triplets or graph.theses)
        ids = {p["id"] for p in passages}
        for rec in [*graph.objects.values(), *graph.triplets.values(), *graph.theses.values()]:
            assert rec.sources and all(s.episode in ids for s in rec.sources)
        for f in graph.triplets.values():
            assert f.subject_id in graph.objects and f.object_id in graph.objects
            assert len(f.fact.split()) <= TRIPLET_WORDS  # Table 6: "not more than 7 words"
            assert (f.invalid_at is None) == (not f.replaced_by)
        r = m.search("Where does Maya work?", k=3, max_tokens=None)
        assert r.hits and all(h.sources for h in r.hits)
        a = m.ask("Where does Maya work?")
        assert a.text and (a.abstained or a.sources)
        # a reply the 135M model leaves unreadable is answered from the contexts, marked
        assert a.extractive == ("unusable_replies" in a.usage)
        usage = m.stats()["llm"]
    assert usage["personalai.query_entities"]["calls"] >= 1
    assert usage["personalai.qa"]["calls"] >= 1
