"""Every design's paper pipeline end to end through llama.cpp's OpenAI-compatible server
with the bundled model (no grammar: the server only knows JSON mode).

A 135M model writes poor graphs, and without a grammar it often misses a line format
(PersonalAI's theses): what is checked is that each ``-paper`` recipe takes every turn
(a turn the model failed on is reported with its error, and stays stored for a retry),
answers through the model, and that the calls' accounts add up per stage (kept +
repaired + failed = calls). MindGraph's
paper pipeline is its reader, read here on the same turns as one transcript.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memstrata.memory import Memory

pytestmark = pytest.mark.slow

TURNS = [
    ("Maya", "I moved to Lisbon in March for the new design job at Atelier Sol."),
    ("Tomas", "Nice! Is Pepper the cat coming with you to Lisbon?"),
    ("Maya", "Yes, Pepper flies with me next week. My sister Ana keeps my old flat in Porto."),
]
QUESTION = "Where does Maya live now?"
PAPER_RECIPES = ["mnemis-paper", "personalai-paper", "higmem-paper", "memtree-paper"]
# A ceiling on every completion: the small profile's own budgets run to 2,048 tokens,
# which this model fills with repetition at about 20 tokens a second on one thread.
CEILING = 192


def _llm(server_url: str) -> dict[str, Any]:
    return {
        "kind": "openai",
        "base_url": server_url,
        "model": "smollm2",
        "profile": "small",
        "context_tokens": 4096,
        "max_tokens": CEILING,
    }


def _calls(usage: dict[str, dict[str, Any]]) -> int:
    return sum(s["calls"] for s in usage.values())


def _accounts_add_up(usage: dict[str, dict[str, Any]]) -> None:
    assert usage, "no LLM call was made"
    for stage, s in usage.items():
        assert s["kept"] + s["repaired"] + s["failures"] == s["calls"], (stage, s)


@pytest.mark.parametrize("recipe", PAPER_RECIPES)
def test_a_paper_recipe_builds_and_answers_through_the_server(
    recipe: str, server_url: str, tmp_path: Path, embedder: Any
) -> None:
    with Memory.open(
        tmp_path / "m.db",
        embedder=embedder,
        llm=_llm(server_url),
        recipe=recipe,
        **{"build.mode": "manual"},
    ) as m:
        ids = m.add_many([{"speaker": s, "text": t} for s, t in TURNS]).added
        assert len(ids) == len(TURNS)
        reports = m.build(tier="llm")
        assert reports and all(r.tier == "llm" for r in reports)
        for r in reports:  # every turn taken; one the model failed on is counted, kept
            assert r.episodes == len(TURNS) and r.failed <= r.episodes, r
            assert len(r.errors) == r.failed
        built = _calls(m.stats()["llm"])
        answer = m.ask(QUESTION)
        assert answer.text.strip()
        assert set(answer.sources) <= set(ids)
        stats = m.stats()
        _accounts_add_up(stats["llm"])
        assert _calls(stats["llm"]) > built  # the answer went through the model
        assert sorted(e.id for e in m.store.get_episodes("default", ids)) == sorted(ids)


def test_the_mindgraph_reader_reads_and_answers_through_the_server(
    server_url: str, tmp_path: Path, embedder: Any
) -> None:
    document = "\n".join(f"{s}: {t}" for s, t in TURNS)
    with Memory.open(tmp_path / "m.db", embedder=embedder, llm=_llm(server_url)) as m:
        reading = m.read(document, QUESTION, tier="llm")
        assert reading.graph["chunks"] >= 1
        assert reading.answer.strip()
        assert reading.usage["stages"]["mindgraph.build"]["calls"] == reading.graph["chunks"]
        _accounts_add_up(reading.usage["stages"])
        for w in reading.windows:  # windows are offsets into the document
            assert document[w.start : w.end] == w.text
