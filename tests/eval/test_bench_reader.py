"""``bench reader`` on the tiny LoCoMo file: documents with turn spans, window recall,
the recipe at the same budget, compaction and throughput in the report."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from memstrata.eval import bench_reader as br
from memstrata.eval.qa import formats
from memstrata.importers import locomo
from memstrata.memory import AsyncMemory

DATA = Path(__file__).parent.parent / "data" / "tiny_locomo.json"


def test_document_spans_are_the_turn_texts() -> None:
    sample = formats.load(DATA, "locomo")[0]
    text, spans = br.document(sample)
    for turn in sample.turns:
        s, e = spans[turn.id]
        assert text[s:e] == turn.text
    assert len(text.splitlines()) == len(sample.turns)
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
        assert row["windows"] >= 1  # the reading kept some of the document for the question
        assert row["baseline_tokens"] <= row["window_tokens"] or row["baseline_tokens"] == 0
    # each conversation read as one document, its build timed once
    assert [d["document"] for d in report["documents"]] == ["tiny-1", "tiny-2"]
    assert report["summary"]["overall"]["n"] == len(wanted) == 5
    assert "words/min" in br.markdown(report)
    jpath, mpath = br.write(report, tmp_path / "out")
    assert jpath.exists() and mpath.exists()


def test_a_qaset_corpus_is_read_as_one_document(tmp_path: Path, embedder) -> None:
    passages = [
        ("Kafka", "Kafka is a platform for streaming data, first written at LinkedIn."),
        ("Lisbon", "Lisbon is the capital of Portugal and lies on the Tagus."),
        ("Porto", "Porto is a city in the north of Portugal, known for its wine."),
        ("Acme", "Acme is a company based in Berlin that builds data pipelines."),
    ]
    data = {
        "sample_id": "corpus",
        "turns": [{"id": t, "text": x} for t, x in passages],
        "qa": [
            {"question": "Which river does Lisbon lie on?", "evidence": ["Lisbon"]},
            {"question": "Where is Acme based?", "evidence": ["Acme"], "category": "x"},
            {"question": "Who wrote the poem?", "evidence": [], "abstain": True},
        ],
    }
    path = tmp_path / "set.json"
    path.write_text(json.dumps([data]))

    async def go() -> dict:
        async with AsyncMemory.open(tmp_path / "q.db", embedder=embedder) as m:
            return await br.run(m, path, fmt="qaset")

    report = asyncio.run(go())
    assert [r["category"] for r in report["questions"]] == ["all", "x"]  # abstain left out
    assert [d["document"] for d in report["documents"]] == ["corpus"]
    # the heuristic reader's windows hold the passage that shares the question's terms
    assert report["questions"][0]["recall"] == 1.0
    assert set(report["summary"]) >= {"overall", "all", "x", "build_words_per_minute"}
