"""``bench qa`` with the bundled GGUF model (SmolLM2-135M) as answerer and judge, end to
end. A 135M model's answers and verdicts are not meant to be good; what is checked is
the plumbing: generated answers, a verdict or a recorded judge error per question,
accounted calls and tokens per stage, and a rerun served by the LLM response cache with
the same answers and no new tokens."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Config
from memstrata.embed import MiniLMEmbedder
from memstrata.eval.qa import bench as qb
from memstrata.eval.qa.run import Options
from memstrata.memory import AsyncMemory

pytestmark = pytest.mark.slow


async def _run(db: Path, data: Path, out: Path, embedder: MiniLMEmbedder) -> dict[str, Any]:
    config = Config(llm={"kind": "gguf"})
    memory = await AsyncMemory.open(db, config=config, embedder=embedder)
    try:
        judge = qb.judge_client(config, memory.store)
        options = Options(["rag"], ["locomo"], limit=2, build_tier="heuristic")
        return await qb.bench(memory, data, "longmemeval", options, out, judge_llm=judge)
    finally:
        await memory.close()


def test_bench_qa_through_smollm2(tmp_path: Path, lme_file: Path, embedder: MiniLMEmbedder) -> None:
    data = lme_file
    report = asyncio.run(_run(tmp_path / "m.db", data, tmp_path / "run", embedder))
    rag = report["recipes"]["rag"]
    assert rag["questions"] == 2 and rag["answers"]["extractive"] == 0
    rows = [
        json.loads(x) for x in (tmp_path / "run" / "questions.jsonl").read_text().split("\n") if x
    ]
    for row in rows:
        assert isinstance(row["answer"], str) and row["answer"].strip()
        assert "f1" in row["scores"]
        assert "locomo" in row["judge"] or "locomo" in row.get("judge_errors", {})
    cost = rag["cost"]
    assert cost["answer"]["calls"] >= 1 and cost["answer"]["prompt_tokens"] > 0
    assert cost["judge"]["calls"] >= 1 and cost["judge"]["prompt_tokens"] > 0
    assert cost["answer"]["money"] is None  # no price for the local model: no guess
    assert report["needs_llm"] == []

    # same store, no result cache: every LLM call is served by the response cache
    again = asyncio.run(_run(tmp_path / "m.db", data, tmp_path / "again", embedder))
    c2 = again["recipes"]["rag"]["cost"]
    assert c2["answer"]["cached"] == c2["answer"]["calls"] == cost["answer"]["calls"]
    assert c2["answer"]["prompt_tokens"] == 0 and c2["judge"]["prompt_tokens"] == 0
    rows2 = [
        json.loads(x) for x in (tmp_path / "again" / "questions.jsonl").read_text().split("\n") if x
    ]
    assert [r["answer"] for r in rows2] == [r["answer"] for r in rows]
    assert [r.get("judge") for r in rows2] == [r.get("judge") for r in rows]
