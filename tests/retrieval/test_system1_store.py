"""The route's refinements, each checked on a small real store (SQLite + MiniLM)."""

from datetime import datetime
from pathlib import Path

import pytest

from memstrata.config import Config
from memstrata.embed import MiniLMEmbedder
from memstrata.memory import Memory
from memstrata.store import SearchFilters

TURNS = [
    {
        "id": "a1",
        "text": "Hi Nora, how was your weekend?",
        "speaker": "Felix",
        "session": "s1",
        "occurred_at": datetime(2023, 5, 6, 10, 0),
    },
    {
        "id": "a2",
        "text": "Great, I went kayaking on the river with my cousin.",
        "speaker": "Nora",
        "session": "s1",
        "occurred_at": datetime(2023, 5, 6, 10, 1),
    },
    {
        "id": "a3",
        "text": "I went kayaking too, a cold lake trip in March.",
        "speaker": "Felix",
        "session": "s1",
        "occurred_at": datetime(2023, 5, 6, 10, 2),
    },
    {
        "id": "b1",
        "text": "Guess what I finally bought?",
        "speaker": "Nora",
        "session": "s2",
        "occurred_at": datetime(2024, 2, 1, 9, 0),
    },
    {
        "id": "b2",
        "text": "An electric piano! I practise scales every evening.",
        "speaker": "Nora",
        "session": "s2",
        "occurred_at": datetime(2024, 2, 1, 9, 1),
    },
    {
        "id": "b3",
        "text": "Nora, that's wonderful news.",
        "speaker": "Felix",
        "session": "s2",
        "occurred_at": datetime(2024, 2, 1, 9, 2),
    },
    {
        "id": "c1",
        "text": "Our team shipped the new billing service.",
        "speaker": "Felix",
        "session": "s3",
        "occurred_at": datetime(2024, 7, 9, 15, 0),
    },
]


@pytest.fixture
def memory(tmp_path: Path, embedder: MiniLMEmbedder) -> Memory:
    m = Memory.open(tmp_path / "r.db", embedder=embedder)
    m.add_many(TURNS, namespace="ns")
    yield m
    m.close()


def ids(memory: Memory, query: str, recipe: str = "default", **kw: object) -> list[str]:
    return [h.id for h in memory.search(query, namespace="ns", recipe=recipe, k=7, **kw).hits]


def test_speaker_matching_prefers_the_named_persons_own_turns(memory: Memory) -> None:
    ranked = ids(memory, "Where did Nora go kayaking?")
    assert ranked.index("a2") < ranked.index("a3")


def test_names_do_not_pull_greetings_up(memory: Memory) -> None:
    # "Nora, that's wonderful news" only shares the name with the question.
    ranked = ids(memory, "What did Nora buy?")
    assert ranked.index("b3") > ranked.index("b1")


def test_session_context_lifts_the_answer_after_a_question(memory: Memory) -> None:
    default = ids(memory, "What did Nora finally buy?")
    assert "b2" in default[:3]


def test_dates_in_questions_raise_turns_of_that_period(
    memory: Memory, embedder: MiniLMEmbedder
) -> None:
    question = "What did Felix do in July 2024?"
    with_dates = ids(memory, question)
    cfg = Config(store=memory.store.url, retrieval={"date_boost": 0.0})
    with Memory.open(config=cfg, embedder=embedder) as without:
        no_dates = [h.id for h in without.search(question, namespace="ns", k=7).hits]
    assert with_dates.index("c1") < no_dates.index("c1")


def test_filters_apply_to_every_route(memory: Memory) -> None:
    only_felix = ids(memory, "kayaking", filters=SearchFilters(speakers=["Felix"]))
    assert set(only_felix) <= {"a1", "a3", "b3", "c1"} and "a3" in only_felix
    in_2024 = ids(memory, "piano", filters=SearchFilters(since=datetime(2024, 1, 1)))
    assert set(in_2024) <= {"b1", "b2", "b3", "c1"}
    s2 = ids(memory, "piano", filters=SearchFilters(sessions=["s2"]))
    assert set(s2) == {"b1", "b2", "b3"}


def test_rag_recipe_is_plain_fusion(memory: Memory) -> None:
    hits = memory.search("electric piano", namespace="ns", recipe="rag", k=3).hits
    assert hits[0].id == "b2"
    assert set(hits[0].routes) == {"bm25", "dense"}


def test_unknown_recipe_is_a_config_error(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    from memstrata.errors import ConfigError

    with Memory.open(tmp_path / "x.db", embedder=embedder, config=Config()) as m:
        m.add("hello there", namespace="ns")
        with pytest.raises(ConfigError, match="unknown recipe"):
            m.search("hello", namespace="ns", recipe="nope")
