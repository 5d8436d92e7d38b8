"""The AutoGen memory against AutoGen's reference ``ListMemory`` on the same operations,
and an ``AssistantAgent`` with AutoGen's ``ReplayChatCompletionClient`` recalling a fact
(with its source episode) into what the model is shown; over ``Memory``, ``AsyncMemory``
and ``RemoteMemory`` to a served store."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent
from autogen_core import CancellationToken, Image
from autogen_core.memory import ListMemory, MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage
from autogen_ext.models.replay import ReplayChatCompletionClient
from tests.integrations.clients import CLIENTS, call, run_over
from tests.service.service_helpers import serving

from memstrata import InvalidInputError, Memory, RemoteMemory
from memstrata.config import Config
from memstrata.embed import MiniLMEmbedder
from memstrata.integrations.autogen import MemstrataMemory

CONTENTS = [
    MemoryContent(content="Ana is vegetarian since May.", mime_type=MemoryMimeType.TEXT),
    MemoryContent(
        content="Ana's sister Marta lives in Porto.",
        mime_type="text/plain",
        metadata={"topic": "family", "confidence": 0.9},
    ),
    MemoryContent(
        content={"city": "Lisbon", "moved": "last week"},
        mime_type=MemoryMimeType.JSON,
        metadata={"topic": "home"},
    ),
    MemoryContent(
        content="# Cello\nAna plays the cello on Sundays.", mime_type=MemoryMimeType.MARKDOWN
    ),
    MemoryContent(content=b"Ana is allergic to peanuts.", mime_type=MemoryMimeType.BINARY),
]


def own(item: MemoryContent) -> tuple[Any, Any, Any]:
    """An item as it was added: content, MIME type, and the caller's metadata."""
    metadata = {k: v for k, v in (item.metadata or {}).items() if k != "memstrata"}
    return item.content, item.mime_type, metadata or None


# against ListMemory ----------------------------------------------------------------------------
@pytest.mark.parametrize("kind", CLIENTS)
def test_the_same_operations_give_what_list_memory_gives(
    kind: str, tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    async def scenario(client: Any) -> None:
        ours = MemstrataMemory(client, namespace="ana", session="t1", k=len(CONTENTS))
        reference = ListMemory()
        for memory in (ours, reference):
            for item in CONTENTS:
                await memory.add(item)
        # a blank query: every memory in the order added, as the reference returns them
        mine, theirs = [await m.query("") for m in (ours, reference)]
        assert [own(i) for i in mine.results] == [own(i) for i in theirs.results]
        assert [own(i) for i in theirs.results] == [own(i) for i in CONTENTS]
        # each item names the episode it is, found by its id
        stored = await call(client.list(namespace="ana"))
        ids = [e.id for e in stored.episodes]
        assert [i.metadata["memstrata"]["sources"] for i in mine.results] == [[x] for x in ids]
        assert {e.session for e in stored.episodes} == {"t1"}
        assert stored.episodes[2].text == '{"city": "Lisbon", "moved": "last week"}'
        # a query as wide as the memory returns what the reference returns, ranked
        mine, theirs = [
            await m.query("Which city did Ana move to last week?") for m in (ours, reference)
        ]
        assert sorted(map(repr, map(own, mine.results))) == sorted(
            map(repr, map(own, theirs.results))
        )
        # update_context: one system message after the conversation, listing what was
        # recalled (the reference lists everything it holds)
        for memory in (ours, reference):
            context = BufferedChatCompletionContext(buffer_size=10)
            await context.add_message(
                UserMessage(content="Which city did Ana move to last week?", source="user")
            )
            result = await memory.update_context(context)
            messages = await context.get_messages()
            assert len(messages) == 2 and isinstance(messages[1], SystemMessage)
            assert len(result.memories.results) == len(CONTENTS)
            assert "Ana is vegetarian since May." in messages[1].content
        first = (await ours.query("Lisbon", k=1)).results
        assert len(first) == 1 and own(first[0]) == own(CONTENTS[2])
        for memory in (ours, reference):
            await memory.clear()
        mine, theirs = [await m.query("") for m in (ours, reference)]
        assert mine.results == theirs.results == []
        assert await call(client.namespaces()) == []
        assert (await ours.query("Lisbon")).results == []  # an empty memory recalls nothing
        await ours.close()
        await reference.close()

    run_over(kind, tmp_path, embedder, scenario)


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_recalled_item_names_its_source_episode(
    kind: str, tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    async def scenario(client: Any) -> None:
        memory = MemstrataMemory(client, namespace="ana", k=2)
        for item in CONTENTS:
            await memory.add(item)
        best = (
            await memory.query(MemoryContent(content="Which instrument?", mime_type="text/plain"))
        ).results
        assert len(best) == 2 and best[0].content == "# Cello\nAna plays the cello on Sundays."
        source = best[0].metadata["memstrata"]
        assert source["kind"] == "episode" and source["namespace"] == "ana" and source["score"] > 0
        (episode,) = await call(client.get(source["sources"], namespace="ana"))
        assert episode.text == best[0].content and episode.id == source["id"]
        other = MemstrataMemory(client, namespace="ben")
        assert (await other.query("Which instrument?")).results == []  # not Ana's

    run_over(kind, tmp_path, embedder, scenario)


# an agent end to end --------------------------------------------------------------------------
@pytest.mark.parametrize("kind", CLIENTS)
def test_an_agent_is_shown_the_recalled_fact_and_its_episode(
    kind: str, tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    async def scenario(client: Any) -> None:
        ana = MemstrataMemory(client, namespace="ana", session="t1")
        await ana.add(MemoryContent(content="I am vegetarian since May.", mime_type="text/plain"))
        await ana.add(MemoryContent(content="My sister lives in Porto.", mime_type="text/plain"))
        (vegetarian,) = [
            e.id
            for e in (await call(client.list(namespace="ana"))).episodes
            if "vegetarian" in e.text
        ]
        model = ReplayChatCompletionClient(["You are vegetarian: a mushroom risotto."])
        agent = AssistantAgent(
            "cook", model_client=model, memory=[MemstrataMemory(client, namespace="ana")]
        )
        result = await agent.run(task="What food should you cook for me?")

        assert result.messages[-1].content == "You are vegetarian: a mushroom risotto."
        (event,) = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
        assert event.content[0].content == "I am vegetarian since May."
        assert event.content[0].metadata["memstrata"]["sources"] == [vegetarian]
        shown = model.create_calls[0]["messages"]
        assert (
            isinstance(shown[1], UserMessage)
            and shown[1].content == "What food should you cook for me?"
        )
        recalled = shown[-1]
        assert isinstance(recalled, SystemMessage)
        assert f"1. I am vegetarian since May. (episodes: {vegetarian})" in recalled.content
        # another user's agent is shown nothing of Ana's
        model = ReplayChatCompletionClient(["I know nothing of you."])
        agent = AssistantAgent(
            "cook", model_client=model, memory=[MemstrataMemory(client, namespace="ben")]
        )
        result = await agent.run(task="What food should you cook for me?")
        assert not [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
        assert not any("vegetarian" in str(m.content) for m in model.create_calls[0]["messages"])

    run_over(kind, tmp_path, embedder, scenario)


# the component config ---------------------------------------------------------------------------
def test_the_component_config_reopens_the_same_memory(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    async def scenario(memory: Memory, remote: RemoteMemory) -> None:
        for client in (memory, remote):
            mine = MemstrataMemory(client, namespace="ana", session="t1", k=3, name="ana's")
            await mine.add(MemoryContent(content="Ana keeps bees.", mime_type="text/plain"))
            dumped = mine.dump_component()
            assert dumped.provider == "memstrata.integrations.autogen.MemstrataMemory"
            again = MemstrataMemory.load_component(dumped)
            assert (again.namespace, again.session, again.k, again.name) == (
                "ana",
                "t1",
                3,
                "ana's",
            )
            (item,) = (await again.query("")).results
            assert item.content == "Ana keeps bees."
            await again.close()
            await mine.clear()
        agent = AssistantAgent(
            "cook",
            model_client=ReplayChatCompletionClient(["ok"]),
            memory=[MemstrataMemory(memory, namespace="ana")],
        )
        (spec,) = agent.dump_component().config["memory"]
        assert spec["config"]["store"].endswith("m.db") and spec["config"]["namespace"] == "ana"

    async def main() -> None:
        with (
            Memory.open(tmp_path / "m.db", embedder=embedder) as memory,
            serving(Config.load(store=str(tmp_path / "served.db"))) as http,
            RemoteMemory(str(http.base_url).rstrip("/").removesuffix("/v1")) as remote,
        ):
            await scenario(memory, remote)

    asyncio.run(main())


# bad input ----------------------------------------------------------------------------------------
def test_bad_input_stores_nothing(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    async def scenario(client: Any) -> None:
        with pytest.raises(InvalidInputError, match="control character"):
            MemstrataMemory(client, namespace="ana\nben")
        memory = MemstrataMemory(client, namespace="ana")
        with pytest.raises(InvalidInputError, match="not JSON"):
            await memory.add(
                MemoryContent(content="fine", mime_type="text/plain", metadata={"when": object()})
            )
        with pytest.raises(InvalidInputError, match="not JSON"):
            await memory.add(
                MemoryContent(content={"x": float("nan")}, mime_type=MemoryMimeType.JSON)
            )
        with pytest.raises(InvalidInputError, match="image"):
            await memory.add(
                MemoryContent(content=Image.from_base64(PIXEL), mime_type=MemoryMimeType.IMAGE)
            )
        with pytest.raises(InvalidInputError, match="UTF-8"):
            await memory.add(MemoryContent(content=b"\xff\xfe", mime_type=MemoryMimeType.BINARY))
        with pytest.raises(InvalidInputError, match="k is"):
            await memory.query("x", k=0)
        token = CancellationToken()
        token.cancel()
        with pytest.raises(asyncio.CancelledError):
            await memory.add(MemoryContent(content="late", mime_type="text/plain"), token)
        assert await call(client.namespaces()) == []

    run_over("memory", tmp_path, embedder, scenario)


#: a 1x1 PNG
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
    "awAAAABJRU5ErkJggg=="
)


def test_importing_memstrata_loads_no_framework() -> None:
    code = (
        "import sys, memstrata, memstrata.integrations; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'autogen_core', 'autogen_agentchat', 'autogen_ext'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
