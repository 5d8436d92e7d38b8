"""One abstention: whatever design answered, and whether a model or the extract did, an
answer that memory does not hold comes back ``abstained=True`` with one text,
:data:`~memstrata.engine.NOT_IN_MEMORY`, and no sources. A model's own token (the
grounded prompt's ``NO_ANSWER``, PersonalAI's ``<NotEnoughtInfo>``, HiGMem's "Not
mentioned in the conversation", MindGraph's "unknown", MemTree's empty answer) is read
where the reply is parsed and shown nowhere."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from memstrata import Memory
from memstrata.embed import MiniLMEmbedder
from memstrata.engine import NOT_IN_MEMORY, Answer, AnswererSpec, Context, Reading
from memstrata.llm import LLMClient, ScriptedBackend

NS = "home"
QUESTION = "What is the name of Tomas's dog?"
TURNS: list[dict[str, Any]] = [
    {"id": "t1", "speaker": "Maya", "text": "I flew to Lisbon for the conference talk."},
    {"id": "t2", "speaker": "Tomas", "text": "We adopted a greyhound called Pepper."},
    {"id": "t3", "speaker": "Maya", "text": "Pepper sounds lovely, send me a photo!"},
    {"id": "t4", "speaker": "Tomas", "text": "The landlord is fine with a dog."},
]

#: each built-in answerer, and its model's way of saying it does not know
ABSTAINS: dict[str, list[Any]] = {
    "grounded": [{"answer": "NO_ANSWER", "sources": ["t2"]}],
    "personalai-qa": [{"chain_of_thoughts": "No dog is named.", "answer": "<NotEnoughtInfo>"}],
    "higmem": [{"answer": "Not mentioned in the conversation"}],
    "higmem-paper": [{"answer": "Not mentioned in the conversation"}],
    "memtree": [{"answer": ""}],
    "memtree-paper": [""],  # the A.2.2 answer is plain text: nothing written abstains
    "mindgraph": [
        json.dumps({"tool": "final", "arguments": {"answer": "unknown", "cited_nodes": []}})
    ],
}


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder) -> Iterator[Memory]:
    db = tmp_path_factory.mktemp("abstain") / "m.db"
    with Memory.open(db, embedder=embedder, **{"build.mode": "manual"}) as m:
        m.add_many(TURNS, namespace=NS)
        m.build(NS, recipe="mindgraph", tier="heuristic")
        yield m


def _answer(memory: Memory, name: str, script: list[Any] | None) -> Answer:
    hits = memory.search(QUESTION, namespace=NS, k=4, recipe="default").hits
    llm = LLMClient(ScriptedBackend(script), max_retries=0) if script is not None else None
    ctx = Context(memory.store, memory.embedder, llm=llm, tier="llm" if llm else "heuristic")
    answerer = memory.engine.registry.answerer(AnswererSpec(name=name))
    return asyncio.run(answerer.answer(ctx, NS, QUESTION, hits))


def test_every_answerer_is_known_here(memory: Memory) -> None:
    assert set(memory.engine.registry.answerers) == set(ABSTAINS)


@pytest.mark.parametrize("name", sorted(ABSTAINS))
def test_a_models_own_abstention_reads_as_the_one_text(memory: Memory, name: str) -> None:
    answer = _answer(memory, name, ABSTAINS[name])
    assert answer.abstained, answer
    assert answer.text == NOT_IN_MEMORY and answer.sources == []


@pytest.mark.parametrize("name", sorted(ABSTAINS))
def test_without_a_model_every_answerer_abstains_with_the_one_text(
    memory: Memory, name: str
) -> None:
    ctx = Context(memory.store, memory.embedder)
    answerer = memory.engine.registry.answerer(AnswererSpec(name=name))
    answer = asyncio.run(answerer.answer(ctx, NS, "What is the boiling point of mercury?", []))
    assert answer.abstained and answer.text == NOT_IN_MEMORY and answer.sources == []


def test_an_answer_that_abstains_says_the_one_text_whatever_it_was_given() -> None:
    """The rule lives in the model: a design cannot show its own token by mistake."""
    answer = Answer(question="q", text="<NotEnoughtInfo>", sources=["t1"], abstained=True)
    assert answer.text == NOT_IN_MEMORY and answer.sources == []
    assert Answer(question="q", text="Pepper").text == "Pepper"
    assert Reading(question="q", answer="unknown", abstained=True).answer == NOT_IN_MEMORY
    assert Reading(question="q", abstained=True).answer == NOT_IN_MEMORY


def test_the_document_reader_abstains_with_the_one_text(memory: Memory) -> None:
    text = "Ana teaches piano in Porto. Her brother Leo builds boats in Aveiro."
    reading = memory.read(text, "What is the boiling point of mercury?", tier="heuristic")
    assert reading.abstained and reading.answer == NOT_IN_MEMORY
