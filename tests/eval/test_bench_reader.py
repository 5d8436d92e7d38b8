"""``bench reader`` on the tiny LoCoMo file: documents with turn spans, window recall,
the recipe at the same budget, compaction and throughput in the report."""

from __future__ import annotations

import asyncio
from pathlib import Path

from memstrata.eval import bench_reader as br
from memstrata.eval import locomo
from memstrata.memory import AsyncMemory

DATA = Path(__file__).parent.parent / "data" / "tiny_locomo.json"


def test_document_spans_are_the_turn_texts() -> None:
    conv = locomo.load(DATA)[0]
    text, spans = br.document(conv)
    for turn in conv.turns:
        s, e = spans[turn["id"]]
        assert text[s:e] == turn["text"]
    assert len(text.splitlines()) == len(conv.turns)
    assert br.inside((5, 9), [(0, 4), (5, 20)]) and not br.inside((5, 30), [(0, 20)])


def test_run_reports_every_question(tmp_path: Path, embedder) -> None:
    async def go() -> dict:
        async with AsyncMemory.open(tmp_path / "b.db", embedder=embedder) as m:
            return await br.run(m, DATA)

    report = asyncio.run(go())
    convs = locomo.load(DATA)
    wanted = [q for c in convs for q in c.questions if q.evidence and q.category in {1, 2, 3, 4}]
    assert [r["id"] for r in report["questions"]] == [q.id for q in wanted]
    for row in report["questions"]:
        assert 0 <= row["recall"] <= 1 and 0 <= row["baseline_recall"] <= 1
        assert row["compaction_ratio"] > 0
        assert row["baseline_tokens"] <= row["window_tokens"] or row["baseline_tokens"] == 0
    assert report["summary"]["build_words_per_minute"] > 0
    assert "words/min" in br.markdown(report)
    jpath, mpath = br.write(report, tmp_path / "out")
    assert jpath.exists() and mpath.exists()
