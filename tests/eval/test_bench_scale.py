from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.eval.bench_scale import real_turns
from memstrata.eval.qa import formats
from memstrata.retrieval.documents import embed_text

TINY = str(Path(__file__).parent.parent / "data" / "tiny_locomo.json")


def test_repeated_turns_stay_distinct_texts_up_to_the_limit() -> None:
    """Every copy of a turn is embedded as a text of its own, so a large run is not served
    by the embedding cache and its vectors do not tie; a size past the variations is
    refused rather than repeating texts."""
    turns = [t for s in formats.load(TINY, "locomo") for t in s.turns]
    originals = {embed_text(t.text, t.speaker, {}) for t in turns}
    speakers = {t.speaker for t in turns}
    assert "Omar" in speakers  # a real speaker among the made-up names is not reused
    most = len(turns) * (703 - 1)
    episodes, questions = real_turns([(TINY, "locomo")], most)
    assert len(episodes) == most and questions
    texts = {embed_text(e["text"], e["speaker"], {}) for e in episodes}
    assert len(texts) == len(originals) * 702  # no two copies embed the same text
    assert len({e["id"] for e in episodes}) == most
    with pytest.raises(ValueError, match="would repeat texts"):
        real_turns([(TINY, "locomo")], most + 1)
