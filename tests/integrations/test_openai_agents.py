"""The Agents SDK adapter: ``MemstrataSession`` against the SDK's reference
``SQLiteSession`` (the same operations on both, with items of every kind an agent run
produces, and the same agent runs over both), and an agent that recalls in one session
what it was told in another, through the recall tool, in process and over the service.
The model is the SDK's own scripted test model (``agents.testing.ScriptedModel``)."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    RunConfig,
    Runner,
    SQLiteSession,
    TResponseInputItem,
    UserError,
    function_tool,
    set_tracing_disabled,
)
from agents.memory import Session, SessionSettings
from agents.testing import ScriptedModel, assistant_message, function_call
from openai.types.responses import ResponseReasoningItem
from openai.types.responses.response_reasoning_item import Summary
from tests.integrations.clients import ALL_CLIENTS, opened

from memstrata import Memory
from memstrata.embed import MiniLMEmbedder
from memstrata.integrations.openai_agents import MemstrataSession, recall_tool

set_tracing_disabled(True)  # no trace export: the runs are offline

#: items of every kind an agent's history holds, as the SDK writes them
ITEMS: list[TResponseInputItem] = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
    {"role": "user", "content": "I moved to Lisbon last week."},
    {"role": "user", "content": [{"type": "input_text", "text": "こんにちは, Привет 😊"}]},
    {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "The user wants the weather."}],
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "weather",
        "arguments": '{"city": "Lisbon"}',
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "24C and sunny"},
    {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": [{"type": "input_text", "text": "rain later"}],
    },
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Sunny, 24C.", "annotations": []}],
    },
    {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": "I cannot share that."}],
    },
    {"role": "user", "content": "Robert'); DROP TABLE students;-- \"O'Reilly\""},
    {"role": "assistant", "content": ""},
    {"type": "item_reference", "id": "msg_0"},
]


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


@pytest.fixture
def reference(tmp_path: Path) -> Any:
    """A factory of the SDK's SQLite sessions, all in one file."""
    made: list[SQLiteSession] = []

    def session(session_id: str, **kwargs: Any) -> SQLiteSession:
        made.append(SQLiteSession(session_id, tmp_path / "reference.db", **kwargs))
        return made[-1]

    yield session
    for s in made:
        s.close()


async def test_the_same_operations_give_the_same_items(client: Any, reference: Any) -> None:
    ours, theirs = MemstrataSession("t1", client, namespace="ana"), reference("t1")
    assert isinstance(ours, Session)
    both = (ours, theirs)

    async def same(step: Any) -> Any:
        got = [await step(s) for s in both]
        assert got[0] == got[1]
        return got[0]

    assert await same(lambda s: s.get_items()) == []
    assert await same(lambda s: s.pop_item()) is None
    await same(lambda s: s.add_items(ITEMS[:7]))
    await same(lambda s: s.add_items([]))
    await same(lambda s: s.add_items(ITEMS[7:]))
    assert await same(lambda s: s.get_items()) == ITEMS
    for limit in (1, 2, 5, len(ITEMS), len(ITEMS) + 5, 0):
        got = await same(lambda s, n=limit: s.get_items(limit=n))
        assert got == (ITEMS[-limit:] if limit else [])
    assert await same(lambda s: s.pop_item()) == ITEMS[-1]
    assert await same(lambda s: s.pop_item()) == ITEMS[-2]
    await same(lambda s: s.add_items([{"role": "user", "content": "And tomorrow?"}]))
    assert (await same(lambda s: s.get_items(limit=2)))[-1]["content"] == "And tomorrow?"
    await same(lambda s: s.clear_session())
    assert await same(lambda s: s.get_items()) == []
    await same(lambda s: s.add_items(ITEMS[2:3]))
    assert await same(lambda s: s.get_items()) == ITEMS[2:3]

    # each item is an episode of the user's namespace in the session, with its role
    await ours.clear_session()
    await ours.add_items(ITEMS)
    stored = (await _list(client, "ana"))[-len(ITEMS) :]
    assert [e.role for e in stored] == [
        "system", "developer", "user", "user", "assistant", "assistant", "tool", "tool",
        "assistant", "assistant", "user", "assistant", "assistant",
    ]  # fmt: skip
    assert {e.session for e in stored} == {"t1"}
    assert [e.text for e in stored[:9]] == [
        "You are a helpful assistant.",
        "Be brief.",
        "I moved to Lisbon last week.",
        "こんにちは, Привет 😊",
        "The user wants the weather.",
        'weather({"city": "Lisbon"})',
        "24C and sunny",
        "rain later",
        "Sunny, 24C.",
    ]
    assert stored[5].speaker == "weather" and stored[9].text == "I cannot share that."
    assert json.loads(stored[11].text) == ITEMS[11]  # no text: searched by its JSON


async def _list(client: Any, namespace: str) -> list[Any]:
    page = client.list(namespace=namespace, limit=1000)
    page = await page if hasattr(page, "__await__") else page
    return list(page.episodes)


async def test_sessions_apart_in_one_namespace(memory: Memory, reference: Any) -> None:
    ours = [MemstrataSession(i, memory, namespace="ana") for i in ("s1", "s2")]
    theirs = [reference(i) for i in ("s1", "s2")]
    for one, two in (ours, theirs):
        await one.add_items([{"role": "user", "content": "Session 1 message"}])
        await two.add_items([{"role": "user", "content": f"Session 2 message {i}"} for i in (1, 2)])
        assert (await two.pop_item()) == {"role": "user", "content": "Session 2 message 2"}
    for a, b in zip(ours, theirs, strict=True):
        assert await a.get_items() == await b.get_items()
    await ours[1].clear_session()
    await theirs[1].clear_session()
    assert await ours[0].get_items() == await theirs[0].get_items() != []
    assert await ours[1].get_items() == await theirs[1].get_items() == []
    # another namespace is another user: the same session id holds nothing of Ana's
    assert await MemstrataSession("s1", memory, namespace="ben").get_items() == []


async def test_the_session_settings_limit(memory: Memory, reference: Any) -> None:
    items: list[TResponseInputItem] = [
        {"role": "user", "content": f"Message {i}"} for i in range(6)
    ]
    settings = SessionSettings(limit=3)
    ours = MemstrataSession("t", memory, session_settings=settings)
    theirs = reference("t", session_settings=settings)
    for s in (ours, theirs):
        await s.add_items(items)
    assert await ours.get_items() == await theirs.get_items() == items[-3:]
    assert await ours.get_items(limit=2) == await theirs.get_items(limit=2) == items[-2:]
    dict_settings = MemstrataSession("t", memory, session_settings={"limit": 1})
    assert await dict_settings.get_items() == items[-1:]
    # where they differ: a negative limit is no items, as the protocol says; the
    # reference's SQLite reads it as no limit at all
    assert await ours.get_items(limit=-1) == []
    assert await theirs.get_items(limit=-1) == items


async def test_concurrent_writes_and_pops(memory: Memory, reference: Any) -> None:
    items: list[TResponseInputItem] = [
        {"role": "user", "content": f"Message {i}"} for i in range(8)
    ]
    popped = []
    for session in (MemstrataSession("t", memory), reference("t")):
        await asyncio.gather(*(session.add_items([item]) for item in items))
        assert sorted(i["content"] for i in await session.get_items()) == sorted(
            i["content"] for i in items
        )
        # each pop takes its own item, however they interleave
        got = await asyncio.gather(*(session.pop_item() for _ in range(5)))
        popped.append(sorted(str(i) for i in got))
        assert len(set(popped[-1])) == 5 and len(await session.get_items()) == 3
    assert len(popped) == 2


# agent runs over both sessions --------------------------------------------------------------
@function_tool
def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city.
    """
    return f"24C and sunny in {city}"


def _script() -> list[Any]:
    """Three turns: a tool call and its answer, a reasoning item and text, plain text."""
    thought = ResponseReasoningItem(
        id="rs_1", type="reasoning", summary=[Summary(type="summary_text", text="Recall it.")]
    )
    return [
        [function_call("weather", {"city": "Lisbon"}, call_id="call_1")],
        [assistant_message("It is sunny in Lisbon.", item_id="msg_1")],
        [thought, assistant_message("You asked about Lisbon.", item_id="msg_2")],
        [assistant_message("Goodbye.", item_id="msg_3")],
    ]


async def _conversation(session: Any, streamed: bool, config: RunConfig | None = None) -> Any:
    model = ScriptedModel(_script())
    agent = Agent(name="assistant", model=model, tools=[weather])
    for said in ("What is the weather in Lisbon?", "Which city did I ask about?", "Bye."):
        if streamed:
            result = Runner.run_streamed(agent, said, session=session, run_config=config)
            async for _ in result.stream_events():
                pass
        else:
            result = await Runner.run(agent, said, session=session, run_config=config)
    model.assert_complete()
    return model


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_agent_runs_see_the_same_history(client: Any, reference: Any, streamed: bool) -> None:
    ours = await _conversation(MemstrataSession("t1", client, namespace="ana"), streamed)
    theirs = await _conversation(reference("t1"), streamed)
    assert [c.input for c in ours.calls] == [c.input for c in theirs.calls]
    last = ours.calls[-1].input
    assert len(last) == 8 and last[-1] == {"role": "user", "content": "Bye."}
    types = [i.get("type", "message") for i in last]
    assert types[1:4] == ["function_call", "function_call_output", "message"]
    assert "reasoning" in types
    history = await MemstrataSession("t1", client, namespace="ana").get_items()
    assert history == await reference("t1").get_items() and len(history) == 9


async def test_a_run_config_limit_reaches_the_session(memory: Memory, reference: Any) -> None:
    config = RunConfig(session_settings=SessionSettings(limit=2))
    ours = await _conversation(MemstrataSession("t1", memory), False, config)
    theirs = await _conversation(reference("t1"), False, config)
    assert [c.input for c in ours.calls] == [c.input for c in theirs.calls]
    assert len(ours.calls[-1].input) == 3  # the last two items, and what was said


def test_a_sync_run(memory: Memory, reference: Any) -> None:
    seen = []
    for session in (MemstrataSession("t1", memory), reference("t1")):
        model = ScriptedModel([[assistant_message("Hello.")], [assistant_message("Hi again.")]])
        agent = Agent(name="assistant", model=model)
        for said in ("Hi.", "Do you remember me?"):
            Runner.run_sync(agent, said, session=session)
        seen.append([c.input for c in model.calls])
    assert seen[0] == seen[1] and len(seen[0][-1]) == 3


# long-term memory across sessions -----------------------------------------------------------
def _recalling(query: str) -> ScriptedModel:
    return ScriptedModel(
        [
            [function_call("recall_memories", {"query": query}, call_id="r1")],
            [assistant_message("You live in Lisbon.")],
        ]
    )


async def test_a_memory_told_in_one_session_is_recalled_in_another(client: Any) -> None:
    tool = recall_tool(client, namespace="ana")
    told = ScriptedModel([[assistant_message("Noted.")], [assistant_message("Noted.")]])
    teller = Agent(name="assistant", model=told, tools=[tool])
    first = MemstrataSession("s1", client, namespace="ana")
    await Runner.run(teller, "I moved to Lisbon last year.", session=first)
    await Runner.run(teller, "My sister Marta lives in Porto.", session=first)

    model = _recalling("which city did I move to")
    agent = Agent(name="assistant", model=model, tools=[tool])
    second = MemstrataSession("s2", client, namespace="ana")
    result = await Runner.run(agent, "Where do I live now?", session=second)
    assert result.final_output == "You live in Lisbon."

    output = (await second.get_items())[2]
    assert output["type"] == "function_call_output" and output["call_id"] == "r1"
    best = json.loads(output["output"])["memories"][0]
    assert best["text"] == "I moved to Lisbon last year." and best["session"] == "s1"
    # the memory names the episode it rests on: the turn of the first session
    episodes = await _get(client, best["sources"], "ana")
    assert [(e.text, e.session, e.role) for e in episodes] == [
        ("I moved to Lisbon last year.", "s1", "user")
    ]
    assert model.calls[-1].input[-1]["output"] == output["output"]  # what the model read

    # a recall's output is searchable by the ids it returned, so a later recall finds the
    # turn, not the copy of it
    stored = [e for e in await _list(client, "ana") if e.session == "s2"]
    assert stored[2].role == "tool" and stored[2].speaker == "recall_memories"
    assert stored[2].text.startswith("recalled episodes " + best["sources"][0])
    third = _recalling("which city did I move to")
    await Runner.run(Agent(name="a", model=third, tools=[tool]), "Hello?", session=first)
    again = json.loads(third.calls[-1].input[-1]["output"])["memories"]
    assert again[0]["sources"] == best["sources"]
    assert [m for m in again if "Lisbon" in m["text"]] == again[:1]


async def _get(client: Any, ids: list[str], namespace: str) -> list[Any]:
    got = client.get(ids, namespace=namespace)
    return list(await got if hasattr(got, "__await__") else got)


async def test_recall_per_user_from_the_run_context(memory: Memory) -> None:
    tool = recall_tool(memory, namespace=lambda ctx: f"users.{ctx.context['user']}", k=1)
    await MemstrataSession("s", memory, namespace="users.ana").add_items(
        [{"role": "user", "content": "I moved to Lisbon last year."}]
    )
    seen = []
    for user in ("ana", "ben"):
        model = _recalling("where do I live")
        agent = Agent(name="a", model=model, tools=[tool])
        await Runner.run(agent, "Where do I live?", context={"user": user})
        seen.append(json.loads(model.calls[-1].input[-1]["output"])["memories"])
    assert [m["text"] for m in seen[0]] == ["I moved to Lisbon last year."]
    assert seen[1] == []  # Ben has no memories: his namespace holds nothing


# bad input ---------------------------------------------------------------------------------
async def test_bad_input_stores_nothing(memory: Memory, reference: Any) -> None:
    with pytest.raises(UserError, match="control character"):
        MemstrataSession("t", memory, namespace="a\nb")
    with pytest.raises(UserError, match="session id"):
        MemstrataSession(" ", memory)
    with pytest.raises(UserError, match="control character"):
        recall_tool(memory, namespace="a\x00b")
    with pytest.raises(UserError, match="positive"):
        recall_tool(memory, k=0)
    good: TResponseInputItem = {"role": "user", "content": "fine"}
    not_json: Any = {"role": "user", "content": "when", "at": object()}
    ours, theirs = MemstrataSession("t", memory), reference("t")
    for session in (ours, theirs):  # the same error as the reference, and nothing stored
        with pytest.raises(TypeError):
            await session.add_items([good, not_json])
        assert await session.get_items() == []
    nan: Any = {"role": "user", "content": "x", "score": math.nan}
    with pytest.raises(ValueError, match="JSON"):
        await ours.add_items([good, nan])
    assert memory.namespaces() == []


async def test_a_bad_namespace_from_the_context_fails_the_run(memory: Memory) -> None:
    tool = recall_tool(memory, namespace=lambda ctx: "bad\nname")
    model = _recalling("anything")
    with pytest.raises(UserError, match="control character"):
        await Runner.run(Agent(name="a", model=model, tools=[tool]), "Hi")
    assert memory.namespaces() == []
    empty = _recalling(" ")
    await Runner.run(Agent(name="a", model=empty, tools=[recall_tool(memory)]), "Hi")
    said = json.loads(empty.calls[-1].input[-1]["output"])
    assert said == {"memories": [], "error": "the query is empty: say what to recall"}


async def test_episodes_written_by_other_means_read_as_messages(memory: Memory) -> None:
    memory.add_many(
        [
            {"id": "a", "text": "Hello there", "role": "user", "session": "s"},
            {"id": "b", "text": "Hi Ana", "role": "assistant", "session": "s"},
            {"id": "c", "text": "A plain note", "session": "s"},
            {"id": "d", "text": "A tool said so", "role": "tool", "session": "s"},
        ]
    )
    assert await MemstrataSession("s", memory).get_items() == [
        {"role": "user", "content": "Hello there"},
        {"role": "assistant", "content": "Hi Ana"},
        {"role": "user", "content": "A plain note"},
        {"role": "user", "content": "A tool said so"},
    ]


def test_importing_memstrata_loads_no_framework() -> None:
    code = (
        "import sys, memstrata, memstrata.integrations; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'agents', 'openai'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
