"""``Memory.ask`` through the real bundled GGUF model (SmolLM2-135M), end to end. A 135M
model's answers are often wrong and its citations often invented; what is checked is the
structure: a generated answer, citations only among the hits, usage accounted."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.embed import MiniLMEmbedder
from memstrata.engine import NOT_IN_MEMORY
from memstrata.memory import Memory

pytestmark = pytest.mark.slow

TURNS = [
    {"id": "t1", "speaker": "Ana", "text": "I planted basil and mint on the balcony."},
    {"id": "t2", "speaker": "Ben", "text": "My brother is learning to fly small planes."},
    {"id": "t3", "speaker": "Ana", "text": "We adopted a tabby cat called Biscuit."},
    {"id": "t4", "speaker": "Ben", "text": "We should meet for coffee on Friday."},
]


def test_ask_through_smollm2(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    with Memory.open(tmp_path / "m.db", embedder=embedder, llm={"kind": "gguf"}) as m:
        m.add_many(TURNS, namespace="home")
        answer = m.ask("What is the cat called?", namespace="home", k=3)
        usage = m.stats("home")["llm"]
    assert not answer.extractive
    assert answer.text.strip()
    assert answer.hits and len(answer.hits) <= 3
    given = {s for h in answer.hits for s in h.sources}
    assert set(answer.sources) <= given
    if answer.abstained:
        assert answer.sources == [] and answer.text == NOT_IN_MEMORY
    assert answer.usage["calls"] >= 1
    assert answer.usage["prompt_tokens"] > 0
    assert usage["answer.grounded"]["calls"] >= 1
    assert usage["answer.grounded"]["prompt_tokens"] >= answer.usage["prompt_tokens"]
