"""The generic ``grounded`` answer stage: with a scripted LLM (prompt, citation filtering,
abstention, invalid output, accounting) and without one (extractive, real MiniLM)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata import Config, Memory
from memstrata.embed import MiniLMEmbedder
from memstrata.engine import NOT_IN_MEMORY, Answer, Context
from memstrata.engine.answer import GroundedAnswerer, GroundedParams
from memstrata.engine.prompts import NO_ANSWER
from memstrata.errors import InvalidInputError, NamespaceNotFoundError
from memstrata.llm import LLMClient, LLMError, LLMOutputError, ScriptedBackend
from memstrata.llm.budgets import Budgets
from memstrata.llm.types import MemoryUsageSink
from memstrata.models import Hit
from memstrata.retrieval.text import sentences
from memstrata.store import Store

NS = "home"
QUESTION = "What is the name of the cat?"
CAT = "We adopted a tabby cat called Biscuit."

TURNS: list[dict[str, Any]] = [
    {"id": "t1", "speaker": "Ana", "text": "I planted basil and mint on the balcony."},
    {"id": "t2", "speaker": "Ben", "text": "My brother is learning to fly small planes."},
    {"id": "t3", "speaker": "Ana", "text": f"Work was hectic this week. {CAT}"},
    {"id": "t4", "speaker": "Ben", "text": "We should meet for coffee on Friday."},
]


@pytest.fixture
def memory(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[Memory]:
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        m.add_many(TURNS, namespace=NS)
        yield m


@pytest.fixture
def hits(memory: Memory) -> list[Hit]:
    found = memory.search(QUESTION, namespace=NS, k=3).hits
    assert found and found[0].sources == ["t3"]  # the premise of the tests below
    return found


def _answer(
    memory: Memory,
    hits: list[Hit],
    script: list[Any],
    *,
    params: GroundedParams | None = None,
    usage: Any = None,
    max_retries: int = 2,
    budgets: Budgets | None = None,
) -> tuple[Answer, ScriptedBackend]:
    backend = ScriptedBackend(script)
    client = LLMClient(backend, usage=usage, max_retries=max_retries, budgets=budgets)
    ctx = Context(memory.store, memory.embedder, llm=client, tier="llm")
    answerer = GroundedAnswerer(params)
    answer = asyncio.run(answerer.answer(ctx, NS, QUESTION, hits))
    return answer, backend


def _snapshot(store: Store) -> tuple[Any, ...]:
    """What a failed answer must leave as it was: episodes, records, build marks."""
    episodes = store.get_episodes(NS, [t["id"] for t in TURNS])
    return (
        [(e.id, e.text) for e in episodes],
        [s.model_dump() for s in store.stats(NS)],
    )


# with an LLM ---------------------------------------------------------------------------


def test_prompt_shows_each_hit_with_its_sources_and_the_question(
    memory: Memory, hits: list[Hit]
) -> None:
    extra = Hit(kind="fact", id="f1", text="Biscuit is a tabby.", score=0.1, sources=["t3", "t1"])
    answer, backend = _answer(memory, [*hits, extra], [{"answer": "Biscuit", "sources": ["t3"]}])
    assert answer.text == "Biscuit" and answer.sources == ["t3"]
    assert not answer.abstained and not answer.extractive
    (request,) = backend.requests
    assert [m.role for m in request.messages] == ["system", "user"]
    assert NO_ANSWER in request.messages[0].content
    user = request.messages[1].content
    for h in hits:
        assert f"[{', '.join(h.sources)}] {h.text}" in user
    assert "[t3, t1] Biscuit is a tabby." in user
    assert user.rstrip().endswith(f"Question: {QUESTION}")
    # hits in rank order, then the question
    positions = [user.index(h.text) for h in [*hits, extra]]
    assert positions == sorted(positions) and positions[-1] < user.index("Question:")
    assert request.json_schema is not None
    assert set(request.json_schema["properties"]) == {"answer", "sources"}
    assert request.max_tokens == Budgets.of("small").tokens("answer.grounded") == 200
    assert answer.hits == [*hits, extra]


def test_a_chat_model_reads_whole_hits_and_gets_room_to_answer(
    memory: Memory, hits: list[Hit]
) -> None:
    """The small profile shows 600 characters of a hit; a chat model reads 4,000."""
    long = Hit(kind="episode", id="x", text="A" * 3000 + " TAIL", score=1.0, sources=["x"])
    reply = [{"answer": "Biscuit", "sources": ["t3"]}]
    small, small_backend = _answer(memory, [long, *hits], reply)
    chat, chat_backend = _answer(memory, [long, *hits], reply, budgets=Budgets.of("chat"))
    assert small.text == chat.text == "Biscuit"
    (asked_small,) = small_backend.requests
    (asked_chat,) = chat_backend.requests
    assert "TAIL" not in asked_small.messages[1].content
    assert "TAIL" in asked_chat.messages[1].content
    assert (asked_small.max_tokens, asked_chat.max_tokens) == (200, 1024)


def test_only_shown_hits_and_their_text_budget_reach_the_prompt(
    memory: Memory, hits: list[Hit]
) -> None:
    long = Hit(kind="episode", id="x", text="A" * 80 + "TAIL", score=1.0, sources=["x"])
    params = GroundedParams(max_items=2, max_chars=50)
    answer, backend = _answer(
        memory,
        [long, *hits],
        # hits[1] is not shown (max_items=2): citing it is dropped like any stranger
        [{"answer": "Biscuit", "sources": ["x", hits[1].sources[0], hits[0].sources[0]]}],
        params=params,
    )
    user = backend.requests[0].messages[1].content
    assert "[x] " + "A" * 50 + "\n" in user and "TAIL" not in user
    assert hits[0].text[:50] in user and hits[1].text not in user
    assert answer.sources == ["x", hits[0].sources[0]]
    assert answer.hits == [long, hits[0]]


def test_cited_ids_outside_the_hits_are_dropped(memory: Memory, hits: list[Hit]) -> None:
    allowed = {s for h in hits for s in h.sources}
    (stored_elsewhere,) = {t["id"] for t in TURNS} - allowed  # stored, but not a hit (k=3)
    cited = ["t9", "t3", " t3 ", stored_elsewhere, "id", hits[1].sources[0]]
    answer, _ = _answer(memory, hits, [{"answer": "Biscuit", "sources": cited}])
    assert answer.text == "Biscuit"
    assert answer.sources == ["t3", hits[1].sources[0]]  # order kept, duplicates merged
    assert not answer.abstained


def test_ids_cited_as_shown_in_brackets_are_understood(memory: Memory, hits: list[Hit]) -> None:
    other = hits[1].sources[0]
    answer, _ = _answer(memory, hits, [{"answer": "Biscuit", "sources": [f"[t3, {other}]"]}])
    assert answer.sources == ["t3", other]


def test_no_hits_abstain_without_calling_the_model(memory: Memory) -> None:
    answer, backend = _answer(memory, [], [{"answer": "Biscuit", "sources": []}])
    assert answer.abstained and answer.text == NOT_IN_MEMORY and answer.sources == []
    assert backend.remaining == 1 and not answer.extractive


@pytest.mark.parametrize(
    "said", [NO_ANSWER, "no answer", "No-answer.", f"  {NO_ANSWER}.", f"Unknown ({NO_ANSWER})", ""]
)
def test_no_answer_reply_abstains_and_cites_nothing(
    memory: Memory, hits: list[Hit], said: str
) -> None:
    answer, _ = _answer(memory, hits, [{"answer": said, "sources": ["t3"]}])
    assert answer.abstained
    assert answer.text == NOT_IN_MEMORY
    assert answer.sources == []
    assert not answer.extractive
    assert answer.usage["calls"] == 1


@pytest.mark.parametrize(
    "said", ["She got no answer from the bank.", "No answer came, so she wrote a letter."]
)
def test_an_answer_that_mentions_no_answer_is_not_an_abstention(
    memory: Memory, hits: list[Hit], said: str
) -> None:
    answer, _ = _answer(memory, hits, [{"answer": said, "sources": ["t3"]}])
    assert not answer.abstained
    assert answer.text == said and answer.sources == ["t3"]


def test_damaged_json_is_repaired_without_another_call(memory: Memory, hits: list[Hit]) -> None:
    chatty = 'Sure! ```json\n{"answer": "Biscuit", "sources": ["t3",],}\n```'
    answer, backend = _answer(memory, hits, [chatty])
    assert answer.text == "Biscuit" and answer.sources == ["t3"]
    assert len(backend.requests) == 1 and answer.usage["calls"] == 1


def test_invalid_json_is_retried_with_the_error_quoted(memory: Memory, hits: list[Hit]) -> None:
    sink = MemoryUsageSink()
    answer, backend = _answer(
        memory,
        hits,
        ['{"reply": "I think the cat is Biscuit"}', {"answer": "Biscuit", "sources": ["t3"]}],
        usage=sink,
    )
    assert answer.text == "Biscuit" and answer.sources == ["t3"]
    assert len(backend.requests) == 2
    retry = backend.requests[1].messages
    assert retry[-2].role == "assistant" and "I think the cat is Biscuit" in retry[-2].content
    assert retry[-1].role == "user" and "That reply was invalid" in retry[-1].content
    # one logical call (two attempts), its tokens summed over both attempts
    assert answer.usage["calls"] == 1
    (record,) = sink.records
    assert record.attempts == 2 and record.ok
    assert answer.usage["prompt_tokens"] == record.prompt_tokens
    # The scripted backend counts words. The first attempt sends 150: the answer system
    # prompt's 105 and a user message of 45 ("Memory:", the two data tags, the hits t3,
    # t2 and t1 at 14, 10 and 10 words with their ids and speakers, "Question:" and the
    # question's 7). The second sends those 150 again, the invalid reply (7) and the
    # request to correct it (30): 150 + 187 = 337.
    assert record.prompt_tokens == 337


def test_model_that_never_gives_valid_json_raises_and_changes_nothing(
    memory: Memory, hits: list[Hit]
) -> None:
    before = _snapshot(memory.store)
    with pytest.raises(LLMError, match="invalid output after 2 attempts") as info:
        _answer(memory, hits, [{"reply": "Biscuit"}, "{still not"], usage=memory.store)
    assert isinstance(info.value, LLMOutputError)
    assert info.value.raw_text == "{still not"
    assert _snapshot(memory.store) == before
    usage = memory.stats(NS)["llm"]["answer.grounded"]
    assert usage["calls"] == 1 and usage["failures"] == 1


def test_a_reply_in_words_is_read_with_the_ids_it_names(memory: Memory, hits: list[Hit]) -> None:
    """A model that writes prose where the JSON was asked has answered: its final answer
    line, citing the shown ids it names in brackets; ids it was not shown are not cited,
    and the marker in words abstains."""
    words = "Item [t3] names the cat.\nAnswer: Biscuit [t3] [t9]"
    answer, backend = _answer(memory, hits, [words, f"Nothing fits.\nAnswer: {NO_ANSWER}"])
    assert answer.text == "Biscuit [t9]" and answer.sources == ["t3"]
    assert not answer.abstained and len(backend.requests) == 1  # read, not asked again
    answer, _ = _answer(memory, hits, [f"Nothing fits.\nAnswer: {NO_ANSWER}"])
    assert answer.abstained and answer.text == NOT_IN_MEMORY and answer.sources == []
    answer, _ = _answer(memory, hits, ["[t3] The cat is Biscuit."])  # a bracket, not JSON
    assert answer.text == "The cat is Biscuit." and answer.sources == ["t3"]


def test_usage_is_on_the_answer_and_recorded_for_the_namespace(
    memory: Memory, hits: list[Hit]
) -> None:
    reply = {"answer": "Biscuit", "sources": ["t3"]}
    sink = MemoryUsageSink()
    answer, backend = _answer(memory, hits, [reply], usage=sink)
    (request,) = backend.requests
    prompt_tokens = sum(len(m.content.split()) for m in request.messages)
    completion_tokens = len(json.dumps(reply).split())
    assert answer.usage == {
        "calls": 1,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
    }
    (record,) = sink.records
    assert record.stage == "answer.grounded" and record.namespace == NS and record.ok


def test_memory_ask_with_an_llm_accounts_in_stats(
    tmp_path: Path, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Memory.ask`` through the configured client: usage on the answer and in ``stats``
    under the namespace asked, not the other one."""
    backends: list[ScriptedBackend] = []

    def scripted_llm(config: Config, store: Store, namespace: str | None = None) -> LLMClient:
        backend = ScriptedBackend([{"answer": "Biscuit", "sources": ["t3", "t99"]}])
        backends.append(backend)
        return LLMClient(backend, usage=store, namespace=namespace)

    monkeypatch.setattr("memstrata.memory.make_llm", scripted_llm)
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        m.add_many(TURNS, namespace=NS)
        m.add("Quarterly numbers are due on Monday.", namespace="work")
        answer = m.ask(QUESTION, namespace=NS, k=3)
        stats_home = m.stats(NS)["llm"]
        stats_work = m.stats("work")["llm"]
        stats_all = m.stats()["llm"]
    assert len(backends) == 1 and len(backends[0].requests) == 1
    assert answer.text == "Biscuit" and answer.sources == ["t3"]
    assert not answer.extractive and not answer.abstained
    assert [h.sources for h in answer.hits][0] == ["t3"] and len(answer.hits) == 3
    assert answer.usage["calls"] == 1
    assert answer.usage["prompt_tokens"] > 0 and answer.usage["completion_tokens"] > 0
    recorded = stats_home["answer.grounded"]
    assert recorded["calls"] == 1 and recorded["failures"] == 0
    assert recorded["prompt_tokens"] == answer.usage["prompt_tokens"]
    assert recorded["completion_tokens"] == answer.usage["completion_tokens"]
    assert "answer.grounded" not in stats_work
    assert stats_all["answer.grounded"]["calls"] == 1


# without an LLM (extractive) -----------------------------------------------------------


def _sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentences(text)]


def _extract(memory: Memory, hits: list[Hit], params: GroundedParams | None = None) -> Answer:
    ctx = Context(memory.store, memory.embedder)
    return asyncio.run(GroundedAnswerer(params).answer(ctx, NS, QUESTION, hits))


def test_extractive_answer_quotes_the_sentence_that_holds_the_answer(
    memory: Memory, hits: list[Hit]
) -> None:
    # reversed: the answer's hit comes last, so rank alone would not find it
    answer = _extract(memory, hits[::-1], GroundedParams(sentences=1))
    assert answer.extractive and not answer.abstained
    # the second sentence of t3 alone (with or without the hit's "Ana: " head), not its first
    assert answer.text in {CAT, f"Ana: {CAT}"}
    assert answer.sources == ["t3"]
    assert answer.usage == {}
    assert answer.hits == hits[::-1]


def test_extractive_answer_with_two_sentences_cites_what_it_quotes(
    memory: Memory, hits: list[Hit]
) -> None:
    answer = _extract(memory, hits[::-1], GroundedParams(sentences=2))
    assert answer.extractive and not answer.abstained and CAT in answer.text
    quoted = [h for h in hits if any(s in answer.text for s in _sentences(h.text))]
    assert "t3" in answer.sources
    assert set(answer.sources) == {s for h in quoted for s in h.sources}


def test_extractive_without_hits_abstains(memory: Memory) -> None:
    answer = _extract(memory, [])
    assert answer.abstained and answer.extractive
    assert answer.text == NOT_IN_MEMORY and answer.sources == [] and answer.hits == []


def test_memory_ask_end_to_end_without_an_llm(memory: Memory) -> None:
    assert memory.llm is None
    answer = memory.ask(QUESTION, namespace=NS, k=2)
    assert isinstance(answer, Answer)
    assert answer.question == QUESTION
    assert answer.extractive and not answer.abstained
    assert CAT in answer.text and "t3" in answer.sources
    assert answer.hits and answer.hits[0].sources == ["t3"] and len(answer.hits) <= 2
    assert set(answer.sources) <= {s for h in answer.hits for s in h.sources}
    assert answer.usage == {}
    assert "answer.grounded" not in memory.stats()["llm"]
    with pytest.raises(NamespaceNotFoundError):
        memory.ask(QUESTION, namespace="nowhere")
    with pytest.raises(InvalidInputError):
        memory.ask("   ", namespace=NS)
