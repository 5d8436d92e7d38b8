"""The LlamaIndex adapters against LlamaIndex's own reference parts.

* The memory block beside LlamaIndex's ``VectorMemoryBlock`` (over LlamaIndex's
  ``SimpleVectorStore``, ranking by the same MiniLM embeddings), in one ``Memory``: the
  same flushed messages reach both, the same messages recall the same best one, both
  keep to a session when asked, both ignore what has no text; beside
  ``StaticMemoryBlock`` and ``FactExtractionMemoryBlock`` for truncation and for what
  outlives the block.
* The retriever beside LlamaIndex's ``VectorIndexRetriever`` over a ``VectorStoreIndex``
  of the same notes and embeddings, alone and in a ``RetrieverQueryEngine`` with
  ``MockLLM``.
* A ``FunctionAgent`` (driven by LlamaIndex's ``MockFunctionCallingLLM``) that is told
  a fact in one session and recalls it, with its source episode, in another: over
  ``Memory``, ``RemoteMemory`` to a served store, ``AsyncMemory`` and
  ``AsyncRemoteMemory``.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms import ChatMessage, ImageBlock, TextBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM, MockLLM
from llama_index.core.memory import Memory as ChatMemory
from llama_index.core.memory.memory_blocks import (
    FactExtractionMemoryBlock,
    StaticMemoryBlock,
    VectorMemoryBlock,
)
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from llama_index.core.utils import get_tokenizer
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryResult
from tests.service.service_helpers import serving

from memstrata import AsyncMemory, AsyncRemoteMemory, InvalidInputError, Memory, RemoteMemory
from memstrata.config import Config
from memstrata.embed import MiniLMEmbedder
from memstrata.integrations.llamaindex import MemstrataMemoryBlock, MemstrataRetriever


class MiniLM(BaseEmbedding):
    """memstrata's MiniLM as a LlamaIndex embedding model, for the reference parts."""

    _embedder: MiniLMEmbedder = PrivateAttr()

    def __init__(self, embedder: MiniLMEmbedder) -> None:
        super().__init__(model_name="all-MiniLM-L6-v2")
        self._embedder = embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._embedder.embed([query])[0]]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_query_embedding(text)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


class TextKeepingStore(SimpleVectorStore):
    """LlamaIndex's ``SimpleVectorStore`` (its ranking and metadata filters), keeping the
    nodes' text as ``VectorMemoryBlock`` requires of a store."""

    stores_text: bool = True
    _nodes: dict[str, Any] = PrivateAttr(default_factory=dict)

    def add(self, nodes: Sequence[Any], **kwargs: Any) -> list[str]:
        self._nodes.update({node.node_id: node for node in nodes})
        return super().add(nodes, **kwargs)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        found = super().query(query, **kwargs)
        found.nodes = [self._nodes[i] for i in found.ids or []]
        return found


CONVERSATION = [
    ("user", "I adopted a grey cat called Pepper in March."),
    ("assistant", "Pepper is a lovely name for a grey cat."),
    ("user", "My sister Marta moved to Porto for a job at a bakery."),
    ("assistant", "Porto is a beautiful city by the river."),
    ("user", "I run five kilometres every morning before work."),
    ("assistant", "Running before work is a great habit to keep."),
    ("user", "I am allergic to peanuts, so satay sauce is off the menu for me."),
    ("assistant", "I will remember your peanut allergy when suggesting food."),
    ("user", "Our book club meets on Thursdays at the city library."),
    ("assistant", "Enjoy the book club and its Thursday meetings."),
]
#: a question, and the message both blocks recall first
ASKED = [
    ("What is my pet's name?", 0),
    ("Where does Marta live now?", 2),
    ("How far do I run each morning?", 4),
    ("What am I allergic to?", 6),
    ("When does the book club meet?", 8),
    ("Tell me about my cat", 0),
    ("Can I eat satay?", 6),
]
OURS = re.compile(
    r'<recalled kind="(\w+)"(?: id="([^"]+)")? sources="([^"]*)"[^>]*>(.*?)</recalled>', re.S
)
THEIRS = re.compile(r"<message role='(\w+)'>(.*?)</message>", re.S)


def recalled(rendered: str) -> list[str]:
    """The texts a rendering of our block holds, in order."""
    return [m.group(4) for m in OURS.finditer(rendered)]


def reference_texts(rendered: str) -> list[str]:
    return [m.group(2) for m in THEIRS.finditer(rendered)]


def said(role: str, text: str) -> ChatMessage:
    return ChatMessage(role=role, content=text)


@pytest.fixture
def memory(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[Memory]:
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        yield m


@pytest.fixture
def reference(embedder: MiniLMEmbedder) -> VectorMemoryBlock:
    return VectorMemoryBlock(
        name="reference", vector_store=TextKeepingStore(), embed_model=MiniLM(embedder)
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The root URL of a ``memstrata serve`` app on loopback, one for the module."""
    path = tmp_path_factory.mktemp("li-served") / "served.db"
    with serving(Config.load(store=str(path))) as http:
        yield str(http.base_url).rstrip("/").removesuffix("/v1")


@pytest.fixture(params=["in-process", "service"])
def client(request: pytest.FixtureRequest, memory: Memory) -> Iterator[Any]:
    if request.param == "in-process":
        yield memory
        return
    with RemoteMemory(request.getfixturevalue("served")) as remote:
        yield remote


def namespace_for(request: pytest.FixtureRequest, user: str) -> str:
    """A namespace of its own for each test, as the served store is shared."""
    return f"{user}.{request.node.name}"


# the memory block against VectorMemoryBlock --------------------------------------------------
def test_flushed_messages_reach_both_blocks_alike(
    memory: Memory, reference: VectorMemoryBlock
) -> None:
    ours = MemstrataMemoryBlock(memory=memory, namespace="ana")
    chat = ChatMemory.from_defaults(
        session_id="s1", token_limit=60, token_flush_size=20, memory_blocks=[ours, reference]
    )
    for role, text in CONVERSATION:
        chat.put(said(role, text))
    flushed = [(e.role, e.text) for e in memory.list(namespace="ana").episodes]
    nodes = list(reference.vector_store._nodes.values())  # one node per flush
    theirs = [(m.group(1), m.group(2)) for n in nodes for m in THEIRS.finditer(n.text)]
    active = chat.get_all(status=None)
    assert len(flushed) >= 4 and flushed == theirs == CONVERSATION[: len(flushed)]
    assert len(active) == len(CONVERSATION)  # LlamaIndex keeps the flushed ones archived
    stored = memory.list(namespace="ana").episodes
    assert {e.session for e in stored} == {n.metadata["session_id"] for n in nodes} == {"s1"}
    # the whole message is kept: it reads back as the message LlamaIndex held
    assert ChatMessage.model_validate(stored[0].metadata["llamaindex"]) == said(*CONVERSATION[0])
    # the next question recalls from both; ours names the episode
    shown = chat.get("What is my cat called?")[0].content or ""
    ours_part = shown.split("<memstrata>")[1].split("</memstrata>")[0]
    (kind, hit_id, sources, text), *_ = (m.groups() for m in OURS.finditer(ours_part))
    assert (kind, hit_id, text) == ("episode", None, CONVERSATION[0][1])  # its own source
    assert memory.get(sources, namespace="ana")[0].text == CONVERSATION[0][1]
    assert CONVERSATION[0][1] in shown.split("<reference>")[1]


async def test_the_same_messages_recall_the_same_best_message(
    memory: Memory, reference: VectorMemoryBlock
) -> None:
    ours = MemstrataMemoryBlock(
        memory=memory, namespace="ana", similarity_top_k=2, session_only=True
    )
    for role, text in CONVERSATION:  # one message a flush: one reference node each
        for block in (ours, reference):
            await block.aput([said(role, text)], session_id="s1")
    for question, best in ASKED:
        asked = [said("user", question)]
        mine = recalled(await ours.aget(asked, session_id="s1"))
        theirs = reference_texts(await reference.aget(asked, session_id="s1"))
        assert mine[0] == theirs[0] == CONVERSATION[best][1], question
        assert len(mine) == len(theirs) == 2
    # the query is the text of the latest messages, five by default in both
    window = [said("user", "Hello"), said("assistant", "Hi"), said("user", "How is Pepper?")]
    assert recalled(await ours.aget(window, session_id="s1"))[0] == CONVERSATION[0][1]
    only_last = MemstrataMemoryBlock(memory=memory, namespace="ana", retrieval_context_window=1)
    latest = await only_last.aget([*window, said("user", "Where is Marta?")])
    assert recalled(latest)[0] == CONVERSATION[2][1]


async def test_sessions_as_the_reference_keeps_them_and_across_them(
    memory: Memory, reference: VectorMemoryBlock
) -> None:
    kept = MemstrataMemoryBlock(memory=memory, namespace="ana", session_only=True)
    for block in (kept, reference):
        await block.aput([said("user", "My bicycle is a red Brompton.")], session_id="s1")
    asked = [said("user", "What bicycle do I ride?")]
    for session, found in (("s1", True), ("s2", False)):
        # a VectorMemoryBlock keeps the session filter of its first call in its
        # query_kwargs: a block of its own for each session, over the same store
        fresh = reference.model_copy(update={"query_kwargs": {}})
        mine = recalled(await kept.aget(asked, session_id=session))
        theirs = reference_texts(await fresh.aget(asked, session_id=session))
        assert bool(mine) == bool(theirs) == found
    # the reference asked about s1 and then s2 answers for s2 from s1
    assert await reference.aget(asked, session_id="s1") != ""
    assert await reference.aget(asked, session_id="s2") != ""
    # by default the block recalls every session of the namespace: long-term memory
    across = MemstrataMemoryBlock(memory=memory, namespace="ana")
    assert recalled(await across.aget(asked, session_id="s2")) == ["My bicycle is a red Brompton."]
    # messages put without a session are stored without one
    await across.aput([said("user", "My helmet is blue.")])
    assert [e.session for e in memory.list(namespace="ana").episodes] == ["s1", None]


async def test_nothing_to_store_or_ask_as_in_the_reference(
    memory: Memory, reference: VectorMemoryBlock
) -> None:
    ours = MemstrataMemoryBlock(memory=memory, namespace="ana")
    textless = ChatMessage(role="user", blocks=[ImageBlock(url="https://example.com/a.png")])
    for block in (ours, reference):
        assert await block.aget([]) == "" and await block.aget(None) == ""
        await block.aput([])
        await block.aput([textless])
        assert await block.aget([textless]) == ""
    assert reference.vector_store._nodes == {} and memory.namespaces() == []
    assert await ours.aget([said("user", "Anything about cats?")]) == ""  # nothing there yet
    # among messages with text, a textless one is left out, in both
    for block in (ours, reference):
        await block.aput([textless, said("user", "I like green tea.")], session_id="s1")
    assert [e.text for e in memory.list(namespace="ana").episodes] == ["I like green tea."]
    (node,) = reference.vector_store._nodes.values()
    assert reference_texts(node.text) == ["I like green tea."]


def test_blocks_that_do_not_take_flushed_messages_get_none(memory: Memory) -> None:
    ours = MemstrataMemoryBlock(memory=memory, namespace="ana", accept_short_term_memory=False)
    chat = ChatMemory.from_defaults(
        session_id="s1", token_limit=40, token_flush_size=10, memory_blocks=[ours]
    )
    for role, text in CONVERSATION[:6]:
        chat.put(said(role, text))
    assert memory.namespaces() == []


async def test_truncation_drops_the_least_relevant_first(memory: Memory) -> None:
    ours = MemstrataMemoryBlock(memory=memory, namespace="ana", similarity_top_k=4, priority=1)
    await ours.aput([said(r, t) for r, t in CONVERSATION], session_id="s1")
    content = await ours.aget([said("user", "Tell me about Pepper the cat")])
    items = recalled(content)
    assert len(items) == 4 and items[0] == CONVERSATION[0][1]
    cut = await ours.atruncate(content, 1)
    assert cut is not None and recalled(cut) == items[:3]
    assert await ours.atruncate(content, 10_000) is None
    assert await ours.atruncate("", 5) is None
    # through Memory: over its limit, the block loses its tail and keeps its best item,
    # while a StaticMemoryBlock of priority 0 is never cut, as LlamaIndex's rule says
    # (a limit that leaves room for the first two items and the static block's text)
    tokens = get_tokenizer()
    lines = content.split("\n")
    over = len(tokens(lines[-1])) + len(tokens(lines[-2])) // 2
    limit = len(tokens(content)) + len(tokens("Answer briefly.")) - over
    static = StaticMemoryBlock(name="rules", static_content="Answer briefly.", priority=0)
    chat = ChatMemory.from_defaults(
        session_id="s2", token_limit=limit, memory_blocks=[static, ours]
    )
    system = chat.get("Tell me about Pepper the cat")[0].content or ""
    assert "Answer briefly." in system and recalled(system) == items[:2]


async def test_what_outlives_the_block(memory: Memory) -> None:
    """LlamaIndex's fact block keeps its facts in the block; a new block (a new process)
    starts empty. The memstrata block's messages are in the store."""
    llm = MockFunctionCallingLLM(
        response_generator=lambda messages, **kw: said(
            "assistant", "<facts><fact>The user is allergic to peanuts.</fact></facts>"
        )
    )
    facts = FactExtractionMemoryBlock(llm=llm)
    ours = MemstrataMemoryBlock(memory=memory, namespace="ana")
    flushed = [said(r, t) for r, t in CONVERSATION[6:8]]
    for block in (facts, ours):
        await block.aput(flushed, from_short_term_memory=True, session_id="s1")
    assert await facts.aget() == "<fact>The user is allergic to peanuts.</fact>"
    asked = [said("user", "What am I allergic to?")]
    assert await FactExtractionMemoryBlock(llm=llm).aget(asked) == ""
    again = MemstrataMemoryBlock(memory=memory, namespace="ana")
    assert recalled(await again.aget(asked))[0] == CONVERSATION[6][1]


def test_a_derived_record_names_the_episodes_it_rests_on(memory: Memory) -> None:
    """Under a recipe that builds records from the episodes (MindGraph's claims), a
    recalled line and a node name the record and the episodes it cites."""
    ours = MemstrataMemoryBlock(memory=memory, namespace="ana", recipe="mindgraph")
    asyncio.run(ours.aput([said(r, t) for r, t in CONVERSATION], session_id="s1"))
    memory.build(namespace="ana", recipe="mindgraph")
    rendered = asyncio.run(ours.aget([said("user", "Where does Marta live now?")]))
    kind, record, sources, text = next(OURS.finditer(rendered)).groups()
    assert kind == "concept_node" and record and text == CONVERSATION[2][1]
    (cited,) = memory.get(sources.split(), namespace="ana")
    assert cited.text == text and cited.session == "s1" and cited.id != record
    retriever = MemstrataRetriever(memory, namespace="ana", recipe="mindgraph")
    node = retriever.retrieve("Where does Marta live now?")[0].node
    assert node.metadata["kind"] == "concept_node" and node.node_id == record
    assert node.metadata["sources"] == [cited.id]


async def test_bad_input_stores_nothing(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match="cannot hold namespace"):
        MemstrataMemoryBlock(memory=memory, namespace="a\nb")
    with pytest.raises(InvalidInputError, match="cannot hold namespace"):
        MemstrataRetriever(memory, namespace=" ")
    with pytest.raises(ValueError, match="similarity_top_k"):
        MemstrataRetriever(memory, similarity_top_k=0)
    with pytest.raises(ValueError, match="similarity_top_k"):  # pydantic's, for the block
        MemstrataMemoryBlock(memory=memory, similarity_top_k=0)
    ours = MemstrataMemoryBlock(memory=memory, namespace="ana")
    for odd in (object(), float("nan")):
        bad = ChatMessage(role="user", content="fine", additional_kwargs={"odd": odd})
        with pytest.raises(InvalidInputError, match="not JSON"):
            await ours.aput([said("user", "first"), bad], session_id="s1")
    assert memory.namespaces() == []


# the retriever against VectorIndexRetriever ---------------------------------------------------
NOTES = [text for role, text in CONVERSATION if role == "user"]


def test_the_retriever_finds_what_the_reference_finds(
    client: Any, embedder: MiniLMEmbedder, request: pytest.FixtureRequest
) -> None:
    ns = namespace_for(request, "notes")
    client.add_many([{"id": f"n{i}", "text": t} for i, t in enumerate(NOTES)], namespace=ns)
    ours = MemstrataRetriever(client, namespace=ns, similarity_top_k=2)
    index = VectorStoreIndex(
        [TextNode(id_=f"n{i}", text=t) for i, t in enumerate(NOTES)],
        embed_model=MiniLM(embedder),
    )
    theirs = index.as_retriever(similarity_top_k=2)
    for question, best in ASKED:
        mine, ref = ours.retrieve(question), theirs.retrieve(question)
        assert all(isinstance(n, NodeWithScore) for n in [*mine, *ref])
        assert len(mine) == len(ref) == 2
        assert mine[0].node.get_content() == ref[0].node.get_content() == CONVERSATION[best][1]
        assert mine[0].node.node_id == ref[0].node.node_id == f"n{best // 2}"
        top = mine[0].node.metadata
        assert top == {"namespace": ns, "kind": "episode", "id": f"n{best // 2}", "sources": [
            f"n{best // 2}"
        ]}  # fmt: skip
        assert client.get(top["sources"], namespace=ns)[0].text == CONVERSATION[best][1]
    # the metadata is shown to the model with the text, never embedded
    node = ours.retrieve("Pepper")[0].node
    assert "sources: ['n0']" in node.get_content(metadata_mode=MetadataMode.LLM)
    assert node.get_content(metadata_mode=MetadataMode.EMBED) == NOTES[0]
    assert MemstrataRetriever(client, namespace=ns + ".none").retrieve("cat") == []
    assert VectorStoreIndex([], embed_model=MiniLM(embedder)).as_retriever().retrieve("cat") == []


def test_a_query_engine_answers_from_the_retrieved_notes(
    client: Any, embedder: MiniLMEmbedder, request: pytest.FixtureRequest
) -> None:
    ns = namespace_for(request, "notes")
    client.add_many([{"id": f"n{i}", "text": t} for i, t in enumerate(NOTES)], namespace=ns)
    index = VectorStoreIndex(
        [TextNode(id_=f"n{i}", text=t) for i, t in enumerate(NOTES)],
        embed_model=MiniLM(embedder),
    )
    engines = [
        RetrieverQueryEngine.from_args(MemstrataRetriever(client, namespace=ns), llm=MockLLM()),
        RetrieverQueryEngine.from_args(index.as_retriever(similarity_top_k=4), llm=MockLLM()),
    ]
    mine, theirs = (engine.query("Which city did my sister move to?") for engine in engines)
    assert mine.source_nodes[0].node.get_content() == theirs.source_nodes[0].node.get_content()
    assert mine.source_nodes[0].node.get_content() == NOTES[1]
    # MockLLM says back its prompt: the notes and the episodes they rest on reached it
    assert NOTES[1] in str(mine) and "sources: ['n1']" in str(mine)
    assert len(mine.source_nodes) == len(theirs.source_nodes) == 4


def test_the_retriever_keeps_to_sessions_and_runs_async(memory: Memory) -> None:
    memory.add_many(
        [
            {"id": "a", "text": "Ana plays the cello on Sundays.", "session": "s1"},
            {"id": "b", "text": "Ben plays the drums on Fridays.", "session": "s2"},
        ],
        namespace="ana",
    )
    only = MemstrataRetriever(memory, namespace="ana", sessions=["s2"])
    assert [n.node.node_id for n in only.retrieve("music")] == ["b"]
    assert only.retrieve("music")[0].node.metadata["session"] == "s2"
    found = asyncio.run(MemstrataRetriever(memory, namespace="ana").aretrieve("cello"))
    assert found[0].node.node_id == "a" and found[0].score is not None and found[0].score > 0


# an agent session end to end -----------------------------------------------------------------
class Scripted:
    """Replies for ``MockFunctionCallingLLM``, keeping what the model was shown."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.seen: list[list[ChatMessage]] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        return said("assistant", self.replies.pop(0))


def chat_memory(client: Any, session: str, namespace: str) -> ChatMemory:
    """A LlamaIndex memory small enough that a turn goes to long-term memory after the
    next one."""
    block = MemstrataMemoryBlock(memory=client, namespace=namespace)
    return ChatMemory.from_defaults(session_id=session, token_limit=25, memory_blocks=[block])


async def converse(client: Any, ana: str, ben: str) -> tuple[Scripted, Any, Any]:
    """Ana tells the agent two things in session s1 and asks in s2; Ben asks in s3."""
    model = Scripted(["Noted.", "Noted.", "You are vegetarian.", "I do not know yet."])
    agent = FunctionAgent(
        llm=MockFunctionCallingLLM(response_generator=model), tools=[], system_prompt="Be kind."
    )
    first = chat_memory(client, "s1", ana)
    await agent.run("Remember: I am vegetarian since May.", memory=first)
    await agent.run("Remember: my sister lives in Porto.", memory=first)
    answer = await agent.run(
        "What food should you cook for me?", memory=chat_memory(client, "s2", ana)
    )
    alone = await agent.run("What food do I like?", memory=chat_memory(client, "s3", ben))
    return model, answer, alone


def check_the_session(model: Scripted, answer: Any, alone: Any, episodes: list[Any]) -> str:
    """What the agent's third call was shown, and its source; the recalled episode's id."""
    assert str(answer) == "You are vegetarian."
    system = model.seen[2][1].content or ""  # the agent's prompt, then memory, then the turn
    assert model.seen[2][-1].content == "What food should you cook for me?"
    assert len(model.seen[2]) == 3  # the new session starts afresh
    hits = [m.groups() for m in OURS.finditer(system)]
    kind, _, hit_id, text = hits[0]
    assert (kind, text) == ("episode", "Remember: I am vegetarian since May.")
    # the first turn was flushed to memstrata in session s1: the hit names its episode
    (fact,) = [e for e in episodes if e.id == hit_id]
    assert fact.session == "s1" and fact.role == "user"
    assert fact.metadata["llamaindex"]["blocks"][0]["text"] == text
    assert f'session="s1">{text}' in system
    # Ben has no memories of his own, and none of Ana's
    assert str(alone) == "I do not know yet." and "<recalled" not in str(model.seen[3])
    return hit_id


# LlamaIndex's workflows read every attribute of the agent, deprecated ones of pydantic too
QUIET = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")


@QUIET
def test_an_agent_recalls_in_one_session_what_was_said_in_another(
    client: Any, request: pytest.FixtureRequest
) -> None:
    ana, ben = namespace_for(request, "ana"), namespace_for(request, "ben")
    model, answer, alone = asyncio.run(converse(client, ana, ben))
    episodes = client.list(namespace=ana).episodes
    assert [(e.role, e.text) for e in episodes] == [
        ("user", "Remember: I am vegetarian since May."),
        ("assistant", "Noted."),
    ]
    hit_id = check_the_session(model, answer, alone, episodes)
    assert client.get(hit_id, namespace=ana)[0].text == "Remember: I am vegetarian since May."
    (node, *_) = MemstrataRetriever(client, namespace=ana).retrieve("vegetarian")
    assert node.node.node_id == hit_id and node.node.metadata["sources"] == [hit_id]
    assert ben not in client.namespaces()


@QUIET
@pytest.mark.parametrize("kind", ["AsyncMemory", "AsyncRemoteMemory"])
def test_an_agent_over_async_clients(
    kind: str, tmp_path: Path, embedder: MiniLMEmbedder, request: pytest.FixtureRequest
) -> None:
    ana, ben = namespace_for(request, "ana"), namespace_for(request, "ben")
    root = request.getfixturevalue("served") if kind == "AsyncRemoteMemory" else ""

    async def run() -> tuple[Scripted, Any, Any, list[Any], list[NodeWithScore]]:
        if kind == "AsyncMemory":
            client = await AsyncMemory.open(tmp_path / "a.db", embedder=embedder)
        else:
            client = AsyncRemoteMemory(root)
        async with client:
            model, answer, alone = await converse(client, ana, ben)
            episodes = (await client.list(namespace=ana)).episodes
            nodes = await MemstrataRetriever(client, namespace=ana).aretrieve("vegetarian")
            with pytest.raises(RuntimeError, match="await its async methods"):
                MemstrataRetriever(client, namespace=ana).retrieve("vegetarian")
            return model, answer, alone, episodes, nodes

    model, answer, alone, episodes, nodes = asyncio.run(run())
    hit_id = check_the_session(model, answer, alone, episodes)
    assert nodes[0].node.node_id == hit_id and nodes[0].node.metadata["sources"] == [hit_id]


def test_importing_memstrata_loads_no_llamaindex() -> None:
    code = (
        "import sys, memstrata, memstrata.integrations; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'llama_index'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_text_block_list_is_one_episode(memory: Memory) -> None:
    message = ChatMessage(
        role="user",
        blocks=[TextBlock(text="I collect "), TextBlock(text="old maps.")],
        additional_kwargs={"lang": "en"},
    )
    held = message.model_copy(deep=True)  # aput adds the session id to the message
    asyncio.run(MemstrataMemoryBlock(memory=memory).aput([message], session_id="s1"))
    (episode,) = memory.list().episodes
    assert episode.text == "I collect old maps." and episode.session == "s1"
    assert ChatMessage.model_validate(episode.metadata["llamaindex"]) == held
