"""The HiGMem ``llm`` tier through the real bundled GGUF model, end to end: four turns
analysed and affiliated with the appendix C prompts, a guided search and an answer, then
a delete repaired through the model.
A small model writes poor metadata; what is checked is that every stage runs, is
counted, and leaves valid layers whose records rest on the turns."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memstrata.designs.higmem.layer import Layers, layer_problems
from memstrata.memory import Memory

pytestmark = pytest.mark.slow


# A ceiling on every call's completion (``llm.max_tokens``): this model's event summaries
# run to their 400-token budget, and a reply cut at the ceiling is closed and parsed like
# any cut reply; what is checked here is structure, not length.
CEILING = 160


def test_llm_tier_builds_retrieves_and_repairs_with_the_gguf_model(
    tmp_path: Path, embedder, sample
) -> None:
    """One build of four turns (a build is most of the time this takes), then a guided
    search with its answer, then a delete: the turns that read the removed one in their
    window are analysed again by the model, the layers stay valid, and no note or event
    keeps a word that only the removed turn had."""
    with Memory.open(
        tmp_path / "m.db",
        embedder=embedder,
        llm={"kind": "gguf", "max_tokens": CEILING},
        recipe="higmem",
        **{"build.mode": "manual"},
    ) as m:
        turns = sample[:4]
        m.add_many(turns)
        (report,) = m.build(tier="llm")
        assert report.tier == "llm" and report.episodes == 4 and report.failed == 0
        lay = Layers.load(m.store, embedder, "default")
        assert layer_problems(lay) == []
        assert len(lay.notes) == 4
        assert lay.events and all(ev.summary.strip() for ev in lay.events.values())
        linked = {t for ev in lay.events.values() for t in ev.turn_ids}
        assert linked == set(lay.notes)
        # Whatever profile keys and direct links the model wrote are stored well-formed:
        # a key names a person and an attribute, a link an earlier turn of the session.
        order = [t["id"] for t in turns]
        for tid, note in lay.notes.items():
            assert all(k.split(": ", 1)[0] and k.split(": ", 1)[1] for k in note.profile)
            assert all(order.index(x) < order.index(tid) for x in note.links_to)
        usage = m.stats()["llm"]
        assert usage["higmem.turn_analysis"]["calls"] >= 4
        assert usage["higmem.affiliation"]["calls"] >= 2  # turns after the first
        answer = m.ask("Where is the conference?")  # guided search, then the answer prompt
        assert answer.text and answer.hits and len(answer.hits) <= 10
        assert all(h.sources and h.kind == "episode" for h in answer.hits)
        usage = m.stats()["llm"]
        for stage in ("higmem.query_keywords", "higmem.filter", "higmem.answer"):
            assert usage[stage]["calls"] == 1
        assert usage["higmem.event_prediction"]["calls"] <= 1

        gone = turns[1]["id"]
        asked = usage["higmem.turn_analysis"]["calls"]
        assert m.delete([gone]) == 1
        lay = Layers.load(m.store, embedder, "default")
        assert layer_problems(lay) == [] and gone not in lay.notes
        # the two later turns of the session read it: each analysed once more
        assert m.stats()["llm"]["higmem.turn_analysis"]["calls"] >= asked + 2
        assert m.stats("default")["namespaces"][0]["repairs"] == {}
        left = " ".join(t["text"] for t in turns if t["id"] != gone).lower()
        only = {w for w in re.findall(r"[a-z]{5,}", turns[1]["text"].lower()) if w not in left}
        assert only
        for rec in [*lay.notes.values(), *lay.events.values()]:
            said = set(re.findall(r"[a-z]{5,}", rec.model_dump_json(exclude={"sources"}).lower()))
            assert not only & said, rec
