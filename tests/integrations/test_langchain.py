"""The LangChain adapters: the retriever through LangChain's own standard tests
(``langchain-tests``' ``RetrieversIntegrationTests``), the chat history against LangChain's
reference ``InMemoryChatMessageHistory``, and a chain that reads a history back and
retrieves from it, in process and over the service."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests
from tests.service.service_helpers import serving

from memstrata import AsyncMemory, InvalidInputError, Memory, RemoteMemory
from memstrata.config import Config
from memstrata.embed import MiniLMEmbedder
from memstrata.integrations.langchain import MemstrataChatMessageHistory, MemstrataRetriever

NOTES = [
    "Ana adopted a grey cat called Pepper in March.",
    "Ben repairs old bicycles in his garage on weekends.",
    "Ana's sister Marta moved to Porto for a job at a bakery.",
    "The book club meets on Thursdays at the library.",
    "Ben is allergic to peanuts and avoids satay.",
    "Ana runs five kilometres every morning before work.",
]


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    path = tmp_path_factory.mktemp("lc") / "m.db"
    with Memory.open(path, embedder=MiniLMEmbedder()) as memory:
        memory.add_many([{"id": f"n{i}", "text": t} for i, t in enumerate(NOTES)])
        yield memory


class TestMemstrataRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's own test cases for any retriever (k in the constructor and in
    ``invoke``, documents returned, sync and async)."""

    @pytest.fixture(autouse=True)
    def _memory(self, filled: Memory) -> None:
        self.memory = filled

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return MemstrataRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": self.memory}

    @property
    def retriever_query_example(self) -> str:
        return "Who has a cat?"


def test_a_document_names_the_episodes_it_rests_on(filled: Memory) -> None:
    (doc,) = MemstrataRetriever(memory=filled, k=1).invoke("Which pet did Ana adopt?")
    assert isinstance(doc, Document) and "Pepper" in doc.page_content
    assert doc.metadata["sources"] == ["n0"] and doc.metadata["kind"] == "episode"
    assert doc.metadata["namespace"] == "default" and doc.metadata["score"] > 0
    (episode,) = filled.get(doc.metadata["sources"])
    assert episode.text == NOTES[0]
    assert MemstrataRetriever(memory=filled, namespace="nobody").invoke("cat") == []


# chat history ------------------------------------------------------------------------------
CONVERSATION = [
    SystemMessage("You are a helpful assistant."),
    HumanMessage("I moved to Lisbon last week.", name="Ana"),
    AIMessage("Welcome to Lisbon! How is the new flat?"),
    ToolMessage("weather: 24C, sunny", tool_call_id="call-1"),
    HumanMessage([{"type": "text", "text": "Sunny and small."}]),
    AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Lisbon"}, "id": "c2"}]),
]


@pytest.fixture
def memory(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[Memory]:
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        yield m


@pytest.mark.filterwarnings("ignore:The class `InMemoryChatMessageHistory` was deprecated")
def test_the_history_reads_back_as_the_reference_keeps_it(memory: Memory) -> None:
    ours = MemstrataChatMessageHistory(memory, "t1", namespace="ana")
    reference = InMemoryChatMessageHistory()
    for history in (ours, reference):
        history.add_messages(CONVERSATION[:2])
        history.add_user_message("And you?")
        history.add_ai_message("I am fine.")
        history.add_messages(CONVERSATION[2:])
    assert ours.messages == reference.messages
    assert [m.type for m in ours.messages] == [m.type for m in reference.messages]
    # each message is an episode of the user's namespace, with its role and session
    stored = memory.list(namespace="ana").episodes
    assert [e.role for e in stored] == [
        "system", "user", "user", "assistant", "assistant", "tool", "user", "assistant"
    ]  # fmt: skip
    assert {e.session for e in stored} == {"t1"} and stored[1].speaker == "Ana"
    for history in (ours, reference):
        history.clear()
    assert ours.messages == reference.messages == []
    assert memory.namespaces() == ["ana"] and memory.list(namespace="ana").episodes == []


def test_sessions_are_apart_and_the_turns_are_searchable_memory(memory: Memory) -> None:
    one = MemstrataChatMessageHistory(memory, "t1", namespace="ana")
    two = MemstrataChatMessageHistory(memory, "t2", namespace="ana")
    one.add_user_message("My cat Pepper hates the vacuum cleaner.")
    two.add_user_message("I am learning Portuguese on Tuesdays.")
    assert [m.content for m in one.messages] == ["My cat Pepper hates the vacuum cleaner."]
    two.clear()
    assert [m.content for m in one.messages] == ["My cat Pepper hates the vacuum cleaner."]
    (doc,) = MemstrataRetriever(memory=memory, namespace="ana", k=1).invoke("pet")
    assert "Pepper" in doc.page_content
    only = MemstrataRetriever(memory=memory, namespace="ana", sessions=["t9"])
    assert only.invoke("pet") == []


def test_turns_written_by_other_means_read_as_messages(memory: Memory) -> None:
    memory.add_many(
        [
            {"id": "a", "text": "Hello there", "role": "user", "speaker": "Ana", "session": "s"},
            {"id": "b", "text": "Hi Ana", "role": "assistant", "session": "s"},
            {"id": "c", "text": "A plain note", "session": "s"},
        ],
        namespace="ana",
    )
    messages = MemstrataChatMessageHistory(memory, "s", namespace="ana").messages
    assert [(m.type, m.content) for m in messages] == [
        ("human", "Hello there"),
        ("ai", "Hi Ana"),
        ("human", "A plain note"),
    ]
    assert messages[0].name == "Ana" and messages[0].id == "a"


def test_bad_input_stores_nothing(memory: Memory) -> None:
    with pytest.raises(ValueError, match="session id"):
        MemstrataChatMessageHistory(memory, " ")
    history = MemstrataChatMessageHistory(memory, "t1", namespace="ana")
    with pytest.raises(InvalidInputError):  # a namespace memstrata cannot hold
        MemstrataChatMessageHistory(memory, "t1", namespace="a\nb").add_user_message("x")
    bad = HumanMessage("fine", additional_kwargs={"when": object()})
    with pytest.raises(TypeError):
        history.add_messages([HumanMessage("first"), bad])
    assert memory.namespaces() == []


def test_async_clients_and_methods(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    async def run() -> tuple[list[Any], list[Document]]:
        async with await AsyncMemory.open(tmp_path / "a.db", embedder=embedder) as m:
            history = MemstrataChatMessageHistory(m, "t1", namespace="ana")
            await history.aadd_messages([HumanMessage("I play the cello on Sundays.")])
            await history.aadd_messages([AIMessage("Lovely.")])
            messages = await history.aget_messages()
            docs = await MemstrataRetriever(memory=m, namespace="ana", k=1).ainvoke("music")
            await history.aclear()
            assert await history.aget_messages() == []
            return messages, docs

    messages, docs = asyncio.run(run())
    assert [m.content for m in messages] == ["I play the cello on Sundays.", "Lovely."]
    assert "cello" in docs[0].page_content


@pytest.mark.filterwarnings("ignore:The class `InMemoryChatMessageHistory` was deprecated")
def test_over_the_service(tmp_path: Path) -> None:
    with serving(Config.load(store=str(tmp_path / "served.db"))) as http:
        root = str(http.base_url).rstrip("/").removesuffix("/v1")
        with RemoteMemory(root) as remote:
            reference = InMemoryChatMessageHistory()
            history = MemstrataChatMessageHistory(remote, "t1", namespace="ana")
            for h in (history, reference):
                h.add_messages(CONVERSATION)
            assert history.messages == reference.messages
            (doc,) = MemstrataRetriever(memory=remote, namespace="ana", k=1).invoke("Lisbon")
            assert doc.metadata["sources"] and "Lisbon" in doc.page_content
