"""MindGraph's evaluation (appendix D.4): the deterministic cascade, then the judge's
reply format for what the cascade does not accept."""

from __future__ import annotations

import asyncio

import pytest

from memstrata.eval.qa.cascade import cascade
from memstrata.eval.qa.judge import judge
from memstrata.llm import LLMClient
from memstrata.llm.scripted import ScriptedBackend


@pytest.mark.parametrize(
    ("gold", "predicted", "rule"),
    [
        ("The Lisbon office", "the lisbon office.", "exact_match"),
        ("1,200", "About 1200 people came.", "normalised_number"),
        ("twelve", "She has 12 cats.", "normalised_number"),
        ("Lisbon", "They moved to Lisbon in 2021.", "containment"),
        (
            "A red kite. It was found near the river after the storm.",
            "Maya found a red kite by the water.",
            "first_sentence_containment",
        ),
        (
            "pottery and watercolour painting",
            "She paints in watercolour and does pottery",
            "key_phrase_f1",
        ),
        ("Lisbon", "Porto", None),
        ("7", "17 days", None),  # 17 is not 7
        ("Lisbon", "Lisbonne", None),  # containment is on word boundaries
        ("dogs, cats, parrots and fish", "dogs", None),  # key-phrase F1 0.4
        ("", "anything", None),
        # a denied mention states nothing; the negation reaches within its clause only
        ("Lisbon", "Not Lisbon, Porto.", None),
        ("Lisbon", "She never moved to Lisbon.", None),
        ("Lisbon", "It isn't Lisbon.", None),
        ("Lisbon", "No, it was Lisbon.", "containment"),
        ("Lisbon", "Not Porto: Lisbon.", "containment"),
        ("Lisbon", "Not Porto but Lisbon.", None),  # too near to tell; the judge decides
        ("not vegan", "She is not vegan.", "containment"),
        ("Lisbon", "She did not like Porto, so she moved to Lisbon.", "containment"),
    ],
)
def test_the_cascade_rules(gold: str, predicted: str, rule: str | None) -> None:
    assert cascade(gold, predicted) == rule


def test_the_judge_is_asked_only_past_the_cascade_and_in_the_papers_format() -> None:
    backend = ScriptedBackend(
        [
            {"correct": True, "reason": "same city"},
            {"correct": False, "reason": "a partial list"},
            "not json",
            "{}",
        ]
    )
    llm = LLMClient(backend, max_retries=2)
    # accepted by the cascade: no call at all
    assert asyncio.run(judge(llm, "mindgraph", "Where?", "Lisbon", "In Lisbon.")) == (1.0, None)
    assert backend.requests == []
    assert asyncio.run(judge(llm, "mindgraph", "City?", "Lisbon", "The Portuguese capital")) == (
        1.0,
        None,
    )
    prompt = backend.requests[0].messages[-1].content
    assert '"correct": true/false, "reason": "brief explanation"' in prompt
    assert "must include ALL key items" in prompt
    assert asyncio.run(
        judge(llm, "mindgraph", "Pets?", "dogs, cats, parrots and fish", "dogs")
    ) == (
        0.0,
        None,
    )
    score, error = asyncio.run(judge(llm, "mindgraph", "Who?", "Ana", "Ben"))
    assert score is None and error and "invalid output" in error  # recorded, not raised


def test_rouge_l_recall_is_the_gold_share_of_the_longest_common_subsequence() -> None:
    from memstrata.eval.qa.metrics_answer import rouge_l_recall

    assert rouge_l_recall("She flew to Lisbon in June", "Lisbon in June") == 1.0
    assert rouge_l_recall("June, then Lisbon", "Lisbon in June") == pytest.approx(1 / 3)
    assert rouge_l_recall("Lisbon in", "the Lisbon office in June") == pytest.approx(2 / 4)
    assert rouge_l_recall("", "Lisbon") == 0.0


def test_the_memtree_judge_is_the_papers_binary_prompt() -> None:
    backend = ScriptedBackend([{"output": 1}, {"output": 0}])
    llm = LLMClient(backend, max_retries=0)
    assert asyncio.run(judge(llm, "memtree", "Where?", "Lisbon", "In Lisbon.")) == (1.0, None)
    assert asyncio.run(judge(llm, "memtree", "Where?", "Lisbon", "Porto")) == (0.0, None)
    prompt = backend.requests[0].messages[-1].content
    assert "Output '1' if the predicted answer addresses the query similarly" in prompt
    assert "[ Ground-Truth Answer ]" in prompt
