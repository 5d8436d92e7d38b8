"""A LangGraph agent with memstrata as its store: a memory written in one thread is
recalled in another, in process and through the service, with a fake chat model (one
of LangChain's own) that records what it was shown."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.base import BaseStore
from pydantic import Field
from tests.service.service_helpers import serving

from memstrata import Memory, RemoteMemory
from memstrata.config import Config
from memstrata.embed import MiniLMEmbedder
from memstrata.integrations.langgraph import MemstrataStore


class Recording(FakeMessagesListChatModel):
    """LangChain's fake chat model, keeping the messages of every call."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


class State(MessagesState):
    recalled: list[dict[str, Any]]


def agent(model: Recording) -> Any:
    def respond(state: State, config: RunnableConfig, *, store: BaseStore) -> dict[str, Any]:
        namespace = ("memories", config["configurable"]["user_id"])
        said = str(state["messages"][-1].content)
        found = store.search(namespace, query=said, limit=3)
        if said.startswith("Remember: "):
            store.put(namespace, str(uuid.uuid4()), {"text": said.removeprefix("Remember: ")})
        memories = "\n".join(f"- {item.value['text']}" for item in found)
        reply = model.invoke([SystemMessage(f"What you remember:\n{memories}"), *state["messages"]])
        recalled = [{"namespace": i.namespace, "key": i.key, **i.value} for i in found]
        return {"messages": [reply], "recalled": recalled}

    builder = StateGraph(State)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    return builder


@pytest.fixture(params=["in-process", "service"])
def client(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: MiniLMEmbedder
) -> Iterator[Any]:
    if request.param == "in-process":
        with Memory.open(tmp_path / "m.db", embedder=embedder) as memory:
            yield memory
        return
    with serving(Config.load(store=str(tmp_path / "served.db"))) as http:
        root = str(http.base_url).rstrip("/").removesuffix("/v1")
        with RemoteMemory(root) as memory:
            yield memory


def test_a_memory_written_in_one_thread_is_recalled_in_another(client: Any) -> None:
    replies = ["Noted.", "Noted.", "You are vegetarian.", "I know nothing of you."]
    model = Recording(responses=[AIMessage(r) for r in replies])
    graph = agent(model).compile(store=MemstrataStore(client), checkpointer=InMemorySaver())
    first = {"configurable": {"thread_id": "t1", "user_id": "ana"}}
    second = {"configurable": {"thread_id": "t2", "user_id": "ana"}}
    graph.invoke({"messages": [HumanMessage("Remember: I am vegetarian since May.")]}, first)
    graph.invoke({"messages": [HumanMessage("Remember: my sister lives in Porto.")]}, first)
    out = graph.invoke({"messages": [HumanMessage("What food should you cook for me?")]}, second)

    assert out["messages"][-1].content == "You are vegetarian."
    assert len(out["messages"]) == 2  # the second thread starts afresh
    best = out["recalled"][0]
    assert best["text"] == "I am vegetarian since May."
    # the recalled item is an episode of the user's namespace: its source
    (episode,) = client.get(best["key"], namespace="memories.ana")
    assert episode.text == "I am vegetarian since May."
    assert "- I am vegetarian since May." in str(model.seen[-1][0].content)
    assert client.namespaces() == ["memories.ana"]
    other = {"configurable": {"thread_id": "t3", "user_id": "ben"}}
    alone = graph.invoke({"messages": [HumanMessage("What food do I like?")]}, other)
    assert alone["recalled"] == []  # another user's memories are not his
