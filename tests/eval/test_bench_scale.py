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


@pytest.mark.slow
def test_a_kept_store_is_continued_and_a_foreign_one_refused(tmp_path: Path) -> None:
    from memstrata.eval import bench_scale

    db = str(tmp_path / "scale.db")
    data = [(TINY, "locomo")]
    first = bench_scale.run(db, sizes=[40], n_queries=3, data=data)
    assert first["kept_episodes"] == 0 and first["sizes"][0]["ingest_episodes_per_s"] is not None
    store = bench_scale.SQLiteStore(db)
    try:
        assert store.stats(bench_scale.NS)[0].episodes == 40  # the 40 were added
    finally:
        store.close()
    again = bench_scale.run(db, sizes=[40, 80], n_queries=3, data=data)
    kept, grown = again["sizes"]
    assert again["kept_episodes"] == 40
    assert kept["ingest_episodes_per_s"] is None and kept["graph_build_s"] is None
    assert grown["ingest_episodes_per_s"] is not None  # timed: 40 were added (80 below)
    assert "| 40 | kept |" in bench_scale.markdown(again)
    store = bench_scale.SQLiteStore(db)
    try:
        assert store.stats(bench_scale.NS)[0].episodes == 80
    finally:
        store.close()
    with pytest.raises(ValueError, match="not this run's first 80"):
        bench_scale.run(db, sizes=[100], n_queries=3)  # synthetic turns: other ids
    with pytest.raises(ValueError, match="only grows"):
        bench_scale.run(db, sizes=[50], n_queries=3, data=data)
