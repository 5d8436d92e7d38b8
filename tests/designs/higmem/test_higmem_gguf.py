"""The HiGMem ``llm`` tier through the real bundled GGUF model, end to end: six turns
analysed and affiliated with the appendix C prompts, then a guided search and an answer.
A small model writes poor metadata; what is checked is that every stage runs, is
counted, and leaves valid layers whose records rest on the turns."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.designs.higmem.layer import Layers, layer_problems
from memstrata.memory import Memory

pytestmark = pytest.mark.slow


def test_llm_tier_builds_and_retrieves_with_the_gguf_model(
    tmp_path: Path, embedder, sample
) -> None:
    with Memory.open(
        tmp_path / "m.db",
        embedder=embedder,
        llm={"kind": "gguf"},
        recipe="higmem",
        **{"build.mode": "manual"},
    ) as m:
        m.add_many(sample[:6])
        (report,) = m.build(tier="llm")
        assert report.tier == "llm" and report.episodes == 6
        lay = Layers.load(m.store, embedder, "default")
        assert layer_problems(lay) == []
        assert len(lay.notes) == 6 - report.failed >= 4
        assert lay.events and all(ev.summary.strip() for ev in lay.events.values())
        linked = {t for ev in lay.events.values() for t in ev.turn_ids}
        assert linked == set(lay.notes)
        usage = m.stats()["llm"]
        assert usage["higmem.turn_analysis"]["calls"] >= 6
        assert usage["higmem.affiliation"]["calls"] >= 4  # every turn after the first
        r = m.search("Where is the conference?", k=10, max_tokens=None)
        assert r.hits and len(r.hits) <= 10 and all(h.sources for h in r.hits)
        usage = m.stats()["llm"]
        for stage in ("higmem.query_keywords", "higmem.event_prediction", "higmem.filter"):
            assert usage[stage]["calls"] >= 1
        answer = m.ask("Where is the conference?")
        assert answer.text and m.stats()["llm"]["higmem.answer"]["calls"] >= 1
