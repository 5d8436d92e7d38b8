"""The public API (``Memory`` and ``AsyncMemory``) over a real SQLite file and real MiniLM."""

from __future__ import annotations

import asyncio
import gc
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata.errors import (
    ConflictError,
    InvalidInputError,
    NamespaceNotFoundError,
    StoreClosedError,
    StoreError,
)
from memstrata.memory import AsyncMemory, Memory
from memstrata.models import EpisodeIn
from memstrata.retrieval.context import count_tokens
from memstrata.store import SearchFilters


@pytest.fixture
def mem(tmp_path: Path, embedder):
    m = Memory.open(tmp_path / "m.db", embedder=embedder)
    yield m
    m.close()


D1, D2 = "2023-05-01T10:0", "2023-06-10T09:0"
CHAT = [
    ("t1", "ana", "s1", D1 + "0:00+00:00", "I adopted a grey cat called Pixel last week."),
    ("t2", "ben", "s1", D1 + "1:00+00:00", "Nice! Does Pixel get along with your dog?"),
    ("t3", "ana", "s1", D1 + "2:00+00:00", "Mostly, although Pixel steals the dog's bed."),
    ("t4", "ben", "s2", D2 + "0:00+00:00", "I finally booked flights to Japan for October."),
    ("t5", "ana", "s2", D2 + "1:00+00:00", "Visit Kyoto in autumn, the maple leaves are red."),
    ("t6", "ben", "s2", D2 + "2:00+00:00", "I also want to eat ramen in Sapporo."),
]


def load_chat(m: Memory, namespace: str | None = None):
    items = [
        {"id": i, "speaker": spk, "session": ses, "occurred_at": when, "text": text}
        for i, spk, ses, when, text in CHAT
    ]
    return m.add_many(items, namespace=namespace) if namespace else m.add_many(items)


def test_add_returns_the_stored_episode(mem: Memory) -> None:
    ep = mem.add(
        "Ana lives in Lisbon.",
        id="a1",
        speaker="ana",
        role="user",
        session="s1",
        occurred_at="2023-05-01T10:00:00+02:00",
        metadata={"source": "chat", "n": 1},
    )
    assert (ep.id, ep.namespace, ep.text, ep.speaker, ep.role, ep.session) == (
        "a1",
        "default",
        "Ana lives in Lisbon.",
        "ana",
        "user",
        "s1",
    )
    assert ep.occurred_at == datetime(2023, 5, 1, 8, 0, tzinfo=UTC)
    assert ep.metadata == {"source": "chat", "n": 1} and ep.seq == 1
    generated = mem.add("No id given.")
    assert re.fullmatch(r"[0-9a-f]{32}", generated.id)
    # the same id with the same content changes nothing (idempotent imports); with other
    # content it is a conflict (tests/test_updates.py)
    again = mem.add(
        "Ana lives in Lisbon.",
        id="a1",
        speaker="ana",
        role="user",
        occurred_at="2023-05-01T08:00:00Z",
        session="s1",
        metadata={"n": 1, "source": "chat"},
    )
    assert again == ep
    with pytest.raises(ConflictError, match="'a1'"):
        mem.add("Different text.", id="a1")
    assert mem.get(["a1"]) == [ep]
    assert mem.get(["a1", generated.id, "nope"]) == [ep, generated]


def test_add_many_accepts_strings_dicts_and_models_with_progress(mem: Memory) -> None:
    calls: list[int] = []
    items = ["plain string one", {"text": "a dict", "id": "d1"}, EpisodeIn(text="a model", id="m1")]
    items += [f"filler {i}" for i in range(7)]
    report = mem.add_many(iter(items), batch_size=4, progress=calls.append)
    assert calls == [4, 4, 2]
    assert len(report.added) == 10 and report.existing == []
    assert "d1" in report.added and "m1" in report.added
    again = mem.add_many([{"text": "a dict", "id": "d1"}, {"text": "new", "id": "n1"}])
    assert again.added == ["n1"] and again.existing == ["d1"]
    assert mem.stats()["namespaces"][0]["episodes"] == 11


# An import file's lines, read with json.loads and handed to add_many as they are.
IMPORT_LINES = [
    {
        "id": "t1",
        "text": "I planted basil on the balcony.",
        "speaker": "Ana",
        "at": "2024-04-01T10:00:00",
        "session": "s1",
        "metadata": {"mood": "proud"},
    },
    {"id": "t2", "text": "The basil is already tall.", "speaker": "Ana", "at": "2024-04-08"},
]


def test_add_many_takes_the_import_line_shape(mem: Memory) -> None:
    report = mem.add_many(IMPORT_LINES)
    assert report.added == ["t1", "t2"]
    first, second = mem.get(["t1", "t2"])
    assert first.occurred_at == datetime(2024, 4, 1, 10, 0)
    assert (first.speaker, first.session, first.metadata) == ("Ana", "s1", {"mood": "proud"})
    assert second.occurred_at == datetime(2024, 4, 8)
    # add(**line) reads the same line the same way
    ep = mem.add(**{**IMPORT_LINES[0], "id": "t3"})
    assert ep.occurred_at == datetime(2024, 4, 1, 10, 0) and ep.metadata == {"mood": "proud"}
    assert mem.add_many(IMPORT_LINES).existing == ["t1", "t2"]  # same content: a no-op


def test_add_many_refuses_an_unknown_key_and_stores_nothing(mem: Memory) -> None:
    lines = [*IMPORT_LINES, {"id": "t3", "text": "Mint next.", "timestamp": "2024-04-09"}]
    with pytest.raises(InvalidInputError) as info:
        mem.add_many(lines)
    message = str(info.value)
    assert "item 2" in message and "'timestamp'" in message
    assert "id, text, speaker, role, at, occurred_at, session, metadata" in message
    assert mem.namespaces() == []
    with pytest.raises(InvalidInputError, match="item 0: .*'when'"):
        mem.add_many([{"text": "x", "when": "now"}, EpisodeIn(text="fine")])
    with pytest.raises(InvalidInputError, match="both 'at' and 'occurred_at'"):
        mem.add_many([{"text": "x", "at": "2024-01-01", "occurred_at": "2024-01-02"}])
    assert mem.namespaces() == []


def test_a_bad_time_is_reported_under_the_key_written(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match=r"item 1: .*\bat: .*'yesterday-ish'") as info:
        mem.add_many([IMPORT_LINES[0], {"text": "x", "at": "yesterday-ish"}])
    assert "occurred_at:" not in str(info.value) and "ISO 8601" in str(info.value)
    with pytest.raises(InvalidInputError, match=r"^invalid episode: at: "):
        mem.add("x", at="yesterday-ish")
    with pytest.raises(InvalidInputError, match=r"item 0: invalid episode: occurred_at: "):
        mem.add_many([{"text": "x", "occurred_at": "yesterday-ish"}])
    assert mem.namespaces() == []


def test_search_hits_carry_kind_text_score_and_sources(mem: Memory) -> None:
    load_chat(mem)
    res = mem.search("What is the name of Ana's cat?")
    assert res.query == "What is the name of Ana's cat?" and res.namespace == "default"
    assert len(res.hits) == len(CHAT)
    top = res.hits[0]
    assert top.kind == "episode" and top.id == "t1" and top.sources == ["t1"]
    assert top.text == "[2023-05-01 10:00] ana: I adopted a grey cat called Pixel last week."
    assert set(top.routes) <= {"dense", "bm25"} and "dense" in top.routes
    assert top.metadata == {"speaker": "ana", "session": "s1"}
    fused = [h.why.fused for h in res.hits if h.why is not None]  # the ranking's own score
    assert fused == sorted(fused, reverse=True) and len(fused) == len(res.hits)
    assert all(0.0 < h.score < 1.0 for h in res.hits)  # relevance, one scale for every query
    assert all(h.sources == [h.id] for h in res.hits)
    assert "(episode t1)" in res.context and "Pixel" in res.context
    assert 0 < res.context_tokens <= 2000
    assert len(mem.search("Pixel", k=2).hits) == 2


def test_search_filters(mem: Memory) -> None:
    load_chat(mem)
    q = "What does Pixel do?"
    by_ben = mem.search(q, filters=SearchFilters(speakers=["ben"]))
    assert {h.id for h in by_ben.hits} == {"t2", "t4", "t6"}
    in_s2 = mem.search(q, filters=SearchFilters(sessions=["s2"]))
    assert {h.id for h in in_s2.hits} == {"t4", "t5", "t6"}
    june = mem.search(q, filters=SearchFilters(since=datetime(2023, 6, 1, tzinfo=UTC)))
    assert {h.id for h in june.hits} == {"t4", "t5", "t6"}
    early = mem.search(q, filters=SearchFilters(until=datetime(2023, 5, 1, 10, 1, tzinfo=UTC)))
    assert {h.id for h in early.hits} == {"t1", "t2"}
    assert mem.search(q, filters=SearchFilters(speakers=["nobody"])).hits == []


def test_token_budget_limits_context_and_hits(mem: Memory, embedder) -> None:
    mem.add_many(
        [
            f"Note {i}: the committee discussed the harbour renovation plan, the budget of "
            f"phase {i}, and the timeline for the new ferry terminal in great detail."
            for i in range(10)
        ]
    )
    q = "harbour renovation budget"
    unlimited = mem.search(q, max_tokens=None)
    assert len(unlimited.hits) == 10
    assert unlimited.context_tokens >= count_tokens(unlimited.context)
    small = mem.search(q, max_tokens=120)
    assert 0 < len(small.hits) < 10
    assert small.context_tokens <= 120
    assert [h.id for h in small.hits] == [h.id for h in unlimited.hits[: len(small.hits)]]
    assert count_tokens(small.context) <= 120
    default = mem.search(q)  # the configured budget, 2000 tokens
    assert default.context_tokens <= 2000 and len(default.hits) == 10
    tight = Memory.open(mem.store.path, embedder=embedder, budgets={"max_tokens": 60})
    try:
        assert tight.search(q).context_tokens <= 60
    finally:
        tight.close()


def test_token_budget_is_never_exceeded_when_first_hit_is_cut(mem: Memory) -> None:
    mem.add("The quick brown fox jumps over the lazy dog while the farmer watches. " * 5)
    for budget in (3, 5, 10, 20):
        res = mem.search("fox farmer", max_tokens=budget)
        assert len(res.hits) == 1
        assert res.context_tokens <= budget, (budget, res.context_tokens, res.context)


def test_search_many_answers_each_query_in_order(mem: Memory) -> None:
    load_chat(mem)
    queries = ["adopting a grey cat", "flights to Japan", "ramen in Sapporo"]
    results = mem.search_many(queries, k=3)
    assert [r.query for r in results] == queries
    assert [r.hits[0].id for r in results] == ["t1", "t4", "t6"]
    assert all(len(r.hits) == 3 for r in results)
    single = mem.search("flights to Japan", k=3)
    assert [h.id for h in single.hits] == [h.id for h in results[1].hits]


def test_semantic_paraphrase_finds_the_right_sentence(mem: Memory) -> None:
    sentences = {
        "dog": "My sister just adopted a golden retriever puppy named Max.",
        "marathon": "I'm training for the Berlin marathon in September.",
        "budget": "The quarterly budget report is due next Friday.",
        "honeymoon": "We spent our honeymoon hiking in the Swiss Alps.",
        "tea": "I switched from coffee to green tea so that I sleep better.",
        "sink": "Our kitchen sink has been leaking since Monday.",
        "promotion": "She got promoted to senior engineer at her company.",
        "violin": "The kids are learning to play the violin at school.",
    }
    mem.add_many([{"id": k, "text": v} for k, v in sentences.items()])
    paraphrases = {
        "dog": "Which relative got a new young dog?",
        "marathon": "What long-distance race am I preparing for?",
        "tea": "Which drink did I give up to get better rest?",
        "sink": "Is there a plumbing problem at home?",
        "promotion": "Who moved up in her job?",
    }
    results = mem.search_many(list(paraphrases.values()), k=2)
    for (want, query), res in zip(paraphrases.items(), results, strict=True):
        assert want in [h.id for h in res.hits], (query, [h.id for h in res.hits])


def test_namespaces_are_separate(tmp_path: Path, embedder) -> None:
    with Memory.open(tmp_path / "m.db", embedder=embedder, namespace="team") as m:
        m.add("Team standup is at nine.", id="x")
        m.add("Private diary: I like jazz.", id="x", namespace="me")
        assert m.namespaces() == ["me", "team"]
        assert [h.text for h in m.search("standup").hits] == ["Team standup is at nine."]
        assert [h.text for h in m.search("standup", namespace="me").hits] == [
            "Private diary: I like jazz."
        ]
        assert m.get(["x"], namespace="me")[0].text.startswith("Private")
        assert m.get(["x"], namespace="ghost") == []


def test_delete_ids_and_whole_namespace(mem: Memory) -> None:
    load_chat(mem)
    load_chat(mem, namespace="copy")
    assert mem.delete(["t1", "t3", "unknown"]) == 2
    assert mem.get(["t1", "t2", "t3"]) == mem.get(["t2"])
    ids = {h.id for h in mem.search("Pixel the cat").hits}
    assert ids.isdisjoint({"t1", "t3"}) and "t2" in ids
    assert mem.stats("default")["namespaces"][0]["episodes"] == len(CHAT) - 2
    assert mem.delete_namespace("copy") == len(CHAT)
    assert mem.namespaces() == ["default"]
    with pytest.raises(NamespaceNotFoundError, match="copy"):
        mem.search("Pixel", namespace="copy")


def test_stats(mem: Memory) -> None:
    load_chat(mem)
    mem.add("elsewhere", namespace="other")
    stats = mem.stats()
    assert stats["store"].startswith("sqlite:///") and stats["store"].endswith("m.db")
    assert stats["bytes"] > 0 and stats["embedder"] == "all-MiniLM-L6-v2-int8"
    assert {s["namespace"]: s["episodes"] for s in stats["namespaces"]} == {
        "default": len(CHAT),
        "other": 1,
    }
    assert all(s["embedded"] == s["episodes"] for s in stats["namespaces"])
    assert stats["llm"] == {}
    only = mem.stats("other")
    assert [s["namespace"] for s in only["namespaces"]] == ["other"]


def test_context_manager_closes_and_data_persists(tmp_path: Path, embedder) -> None:
    path = tmp_path / "m.db"
    with Memory.open(path, embedder=embedder) as m:
        m.add("Persist me across sessions.", id="p")
        store = m.store
    with pytest.raises(StoreError, match="closed"):
        store.namespaces()
    m.close()  # closing twice is harmless
    with Memory.open(path, embedder=embedder) as again:
        assert again.get(["p"])[0].text == "Persist me across sessions."
        assert again.search("persist across sessions").hits[0].id == "p"


def test_a_closed_memory_says_so_for_every_verb(
    tmp_path: Path, embedder, recwarn: pytest.WarningsRecorder
) -> None:
    path = tmp_path / "m.db"
    with Memory.open(path, embedder=embedder) as m:
        m.add("Remember me.", id="r")
    verbs = [
        lambda: m.add("too late", id="late"),
        lambda: m.add_many(["too late"]),
        lambda: m.search("remember"),
        lambda: m.ask("what to remember?"),
        lambda: m.get(["r"]),
        lambda: m.update("r", "changed"),
        lambda: m.history("r"),
        lambda: m.delete(["r"]),
        lambda: m.stats(),
        lambda: m.namespaces(),
        lambda: m.build(),
    ]
    for verb in verbs:
        with pytest.raises(StoreClosedError, match=f"{re.escape(str(path))}: the store has been"):
            verb()
    m.close()  # closing again is harmless
    gc.collect()  # a coroutine left unawaited would warn when collected
    assert [str(w.message) for w in recwarn] == []

    async def closed_async_memory() -> None:
        inner = await AsyncMemory.open(path, embedder=embedder)
        await inner.close()
        with pytest.raises(StoreClosedError, match="the store has been closed"):
            await inner.stats()

    asyncio.run(closed_async_memory())
    with Memory.open(path, embedder=embedder) as again:  # and nothing was written
        assert [e.id for e in again.get(["r", "late"])] == ["r"]
        assert again.get(["r"])[0].text == "Remember me."


def test_search_with_k_zero_is_rejected(mem: Memory) -> None:
    load_chat(mem)
    with pytest.raises(InvalidInputError, match="k must be positive"):
        mem.search("Pixel", k=0)


def test_search_rejects_bad_queries(mem: Memory) -> None:
    load_chat(mem)
    with pytest.raises(InvalidInputError, match="k must be positive"):
        mem.search("Pixel", k=-1)
    with pytest.raises(InvalidInputError, match="query is empty"):
        mem.search("   ")
    with pytest.raises(InvalidInputError, match="query is empty"):
        mem.search_many(["fine", ""])


def test_async_memory(tmp_path: Path, embedder) -> None:
    async def main() -> None:
        async with await AsyncMemory.open(tmp_path / "a.db", embedder=embedder) as m:
            reports = await asyncio.gather(
                m.add_many(
                    [{"id": f"a{i}", "text": f"apple fact {i}"} for i in range(20)], batch_size=5
                ),
                m.add_many(
                    [{"id": f"b{i}", "text": f"bicycle fact {i}"} for i in range(20)], batch_size=5
                ),
                m.add("The lighthouse keeper paints watercolours.", id="lh"),
            )
            assert len(reports[0].added) == 20 and len(reports[1].added) == 20
            assert reports[2].id == "lh"
            found, also = await asyncio.gather(
                m.search("Who paints pictures by the sea?", k=3), m.search("bicycle fact 7", k=1)
            )
            assert found.hits[0].id == "lh"
            assert also.hits[0].id == "b7"
            stats = await m.stats()
            assert stats["namespaces"][0]["episodes"] == 41
            assert await m.delete(["lh"]) == 1
            assert await m.get(["lh"]) == []

    asyncio.run(main())


class CountingEmbedder:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.texts: list[str] = []

    def embed(self, texts: list[str]):
        self.texts.extend(texts)
        return self.inner.embed(texts)


def test_embeddings_are_cached_by_content_hash(tmp_path: Path, embedder) -> None:
    counting = CountingEmbedder(embedder)
    with Memory.open(tmp_path / "c.db", embedder=counting) as m:
        m.add("The same words, said twice.", id="one", speaker="Ana")
        m.add("The same words, said twice.", id="two", speaker="Ana", namespace="other")
        m.add("Different words.", id="three", speaker="Ana")
        assert len(counting.texts) == 2  # the repeated text was embedded once
        hits = m.search("words said twice", namespace="other", k=1).hits
        assert hits[0].sources == ["two"]
