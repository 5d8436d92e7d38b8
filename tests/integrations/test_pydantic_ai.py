"""The pydantic-ai adapter: agents run with pydantic-ai's own test models
(``FunctionModel`` scripted here, ``TestModel`` calling every tool) remember in one
conversation and recall in another, through the tools and the history processor, in
process and over the service; the history the processor leaves is checked against
pydantic-ai's own message schema."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from tests.integrations.clients import ALL_CLIENTS, opened

from memstrata import Memory
from memstrata.embed import MiniLMEmbedder
from memstrata.integrations.pydantic_ai import HEADING, MemstrataMemory


@dataclass
class User:
    name: str


@pytest.fixture(params=ALL_CLIENTS)
async def client(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: MiniLMEmbedder
) -> AsyncIterator[Any]:
    """Each of the four memstrata clients, over a fresh store."""
    async with opened(request.param, tmp_path, embedder) as memory:
        yield memory


@pytest.fixture
def memory(tmp_path: Path, embedder: MiniLMEmbedder) -> Any:
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        yield m


async def _call(client: Any, verb: str, *args: Any, **kwargs: Any) -> Any:
    """A verb of any client, sync or async."""
    out = getattr(client, verb)(*args, **kwargs)
    return await out if hasattr(out, "__await__") else out


class Scripted:
    """A FunctionModel's function: "Remember: ..." calls ``remember``, a question calls
    ``recall``, a tool's result is answered with text. It keeps what it was shown."""

    def __init__(self) -> None:
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        last = messages[-1]
        if any(isinstance(p, ToolReturnPart) for p in last.parts):
            return ModelResponse(parts=[TextPart("Done.")])
        said = str(last.parts[-1].content)
        if said.startswith("Remember: "):
            fact = said.removeprefix("Remember: ")
            return ModelResponse(parts=[ToolCallPart("remember", {"text": fact})])
        return ModelResponse(parts=[ToolCallPart("recall", {"query": said})])


def _parts(messages: list[ModelMessage], kind: type) -> list[Any]:
    return [p for m in messages for p in m.parts if isinstance(p, kind)]


def _recalled(messages: list[ModelMessage]) -> list[SystemPromptPart]:
    return [p for p in _parts(messages, SystemPromptPart) if p.content.startswith(HEADING)]


async def test_remembered_in_one_conversation_recalled_in_another(client: Any) -> None:
    script = Scripted()
    memory = MemstrataMemory(client, namespace=lambda ctx: f"users.{ctx.deps.name}")
    agent = Agent(FunctionModel(script), deps_type=User, capabilities=memory.capabilities())
    ana = User("ana")
    first = await agent.run("Remember: I am vegetarian since May.", deps=ana)
    first = await agent.run(
        "Remember: my sister lives in Porto.", deps=ana, message_history=first.all_messages()
    )
    stored = (await _call(client, "list", namespace="users.ana")).episodes
    assert [e.text for e in stored] == ["I am vegetarian since May.", "my sister lives in Porto."]
    assert {e.session for e in stored} == {first.conversation_id}
    returned = _parts(first.all_messages(), ToolReturnPart)
    assert [r.content for r in returned] == [{"id": e.id} for e in stored]
    assert stored[0].metadata["pydantic_ai"]["tool_call_id"] == returned[0].tool_call_id

    second = await agent.run("What food should you cook for me?", deps=ana)
    assert second.output == "Done." and second.conversation_id != first.conversation_id
    # the history processor put the memory before the question, as the model was shown it
    shown = script.seen[-2]
    (part,) = _recalled(shown)
    assert part.content.splitlines()[1] == f"- I am vegetarian since May. (episodes {stored[0].id})"
    assert isinstance(shown[-1].parts[-1], UserPromptPart)
    # the recall tool's best memory names its episode, from the first conversation
    (answer,) = _parts(second.all_messages(), ToolReturnPart)
    best = answer.content["memories"][0]
    assert best["text"] == "I am vegetarian since May." and best["sources"] == [stored[0].id]
    (episode,) = await _call(client, "get", best["sources"], namespace="users.ana")
    assert episode.session == first.conversation_id == best["session"]
    assert part.metadata["pydantic_ai"]["memories"][0]["sources"] == [stored[0].id]

    ben = await agent.run("What food should you cook for me?", deps=User("ben"))
    assert _recalled(ben.all_messages()) == []  # another user's memories are not his
    assert _parts(ben.all_messages(), ToolReturnPart)[0].content == {"memories": []}
    assert await _call(client, "namespaces") == ["users.ana"]


async def test_the_processor_recalls_once_per_user_prompt(memory: Memory) -> None:
    memory.add("Ana is vegetarian since May.", namespace="ana")
    script = Scripted()
    agent = Agent(
        FunctionModel(script), capabilities=MemstrataMemory(memory, namespace="ana").capabilities()
    )
    run = await agent.run("What does Ana eat?")
    run = await agent.run("Is Ana vegetarian?", message_history=run.all_messages())
    history = run.all_messages()
    # one part per user prompt, in the request of that prompt; none before tool results
    assert len(_recalled(history)) == 2 and len(script.seen) == 4
    for request in [m for m in history if isinstance(m, ModelRequest)]:
        prompts = [p for p in request.parts if isinstance(p, UserPromptPart)]
        assert len(_recalled([request])) == len(prompts)
    # and it is history pydantic-ai itself reads back: its schema, the metadata included
    again = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(history))
    assert again == history
    assert _recalled(again)[1].metadata["pydantic_ai"]["query"] == "Is Ana vegetarian?"


async def test_test_model_calls_every_tool(memory: Memory) -> None:
    """pydantic-ai's TestModel calls each tool with arguments made from its schema."""
    memstrata = MemstrataMemory(memory, namespace="ana")
    agent = Agent(TestModel(), capabilities=memstrata.capabilities())
    run = await agent.run("Hello")
    stored = memory.list(namespace="ana").episodes
    assert [e.text for e in stored] == ["a"]  # TestModel's text for a string argument
    returns = {r.tool_name: r.content for r in _parts(run.all_messages(), ToolReturnPart)}
    assert returns["remember"] == {"id": stored[0].id}
    assert returns["recall"]["memories"][0]["sources"] == [stored[0].id]


async def test_metadata_of_the_run_is_kept(memory: Memory) -> None:
    memstrata = MemstrataMemory(
        memory, metadata=lambda ctx: {"app": "kitchen", "user": ctx.deps.name}
    )
    agent = Agent(FunctionModel(Scripted()), deps_type=User, toolsets=[memstrata.toolset()])
    run = await agent.run("Remember: the oven is broken.", deps=User("ana"))
    (episode,) = memory.list().episodes
    held = episode.metadata["pydantic_ai"]
    assert held["app"] == "kitchen" and held["user"] == "ana"
    assert held["conversation_id"] == run.conversation_id == episode.session


async def test_bad_input_stores_nothing(memory: Memory) -> None:
    with pytest.raises(UserError, match="control character"):
        MemstrataMemory(memory, namespace="a\nb")
    with pytest.raises(UserError, match="positive"):
        MemstrataMemory(memory, k=0)
    said = "Remember: something."
    bad = MemstrataMemory(memory, namespace=lambda ctx: "bad\tname")
    with pytest.raises(UserError, match="control character"):
        await Agent(FunctionModel(Scripted()), toolsets=[bad.toolset()]).run(said)
    for odd, error in (({"when": object()}, TypeError), ({"score": math.nan}, ValueError)):
        odd_metadata = MemstrataMemory(memory, metadata=lambda ctx, odd=odd: odd)
        with pytest.raises(error):
            await Agent(FunctionModel(Scripted()), toolsets=[odd_metadata.toolset()]).run(said)
    # an empty text goes back to the model, to try again
    script = Scripted()
    agent = Agent(FunctionModel(script), toolsets=[MemstrataMemory(memory).toolset()])
    run = await agent.run("Remember:  ")
    (retry,) = _parts(run.all_messages(), ToolReturnPart)
    assert retry.outcome == "retried" and "empty" in str(retry.content)
    assert memory.namespaces() == []


def test_a_sync_run(memory: Memory) -> None:
    memory.add("Ana is vegetarian since May.", namespace="ana")
    script = Scripted()
    memstrata = MemstrataMemory(memory, namespace="ana")
    run = Agent(FunctionModel(script), capabilities=memstrata.capabilities()).run_sync("Food?")
    assert "vegetarian" in _recalled(script.seen[0])[0].content
    (answer,) = _parts(run.all_messages(), ToolReturnPart)
    assert answer.content["memories"][0]["text"] == "Ana is vegetarian since May."


def test_importing_memstrata_loads_no_framework() -> None:
    code = (
        "import sys, memstrata, memstrata.integrations; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'pydantic_ai'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
