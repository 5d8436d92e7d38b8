"""The ADK memory service against ADK's reference ``InMemoryMemoryService``: the same
sessions, events, deletions and queries on both, compared where both must agree whatever
their ranking (which memories, with their ids, content, author and time; the one
memory that alone shares the query's words first). Then a ``Runner`` with a model
defined here (scripted responses, recording what it is shown) recalling a memory
through ``preload_memory`` and ``load_memory``; over ``Memory``, ``AsyncMemory`` and
``RemoteMemory`` to a served store."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncGenerator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.errors.input_validation_error import InputValidationError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.base_memory_service import BaseMemoryService
from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.session import Session
from google.adk.tools import load_memory, preload_memory
from google.genai import types
from pydantic import Field
from tests.integrations.clients import CLIENTS, call, run_over

from memstrata.embed import MiniLMEmbedder
from memstrata.integrations.google_adk import MemstrataMemoryService

APP, ANA, BEN = "kitchen", "ana", "ben"


def event(eid: str, text: str | None, author: str = "user", at: float = 1000.0, **kw: Any) -> Event:
    content = types.Content(parts=[types.Part(text=text)]) if text is not None else None
    return Event(id=eid, invocation_id=kw.pop("inv", f"inv-{eid}"), author=author,
                 timestamp=at, content=content, **kw)  # fmt: skip


def session(sid: str, events: list[Event], user: str = ANA, app: str = APP) -> Session:
    return Session(app_name=app, user_id=user, id=sid, last_update_time=0, events=events)


FIRST = session(
    "s1",
    [
        event("e1", "I cook risotto with mushrooms on Fridays.", at=1000),
        event("e2", None, at=1001),  # no content: nothing to remember
        event("e3", "Mushroom risotto sounds lovely; do you add wine?", "cook", at=1002),
        Event(
            id="e4",
            invocation_id="inv-e4",
            author="cook",
            timestamp=1003,
            content=types.Content(
                parts=[
                    types.Part(text="the user likes risotto", thought=True),
                    types.Part(text="A splash of white wine helps the risotto."),
                ]
            ),
        ),
    ],
)
SECOND = session("s2", [event("e5", "My sister Marta lives in Porto near the river.", at=2000)])
BENS = session("s3", [event("e6", "Ben keeps a secret recipe for risotto.", at=3000)], user=BEN)


def seen(entries: list[MemoryEntry]) -> list[tuple[Any, ...]]:
    """What both services must agree on of a memory, whatever their ranking."""
    return sorted(
        (m.id, m.author, m.timestamp, tuple(p.text for p in m.content.parts or [])) for m in entries
    )


async def both(
    pair: tuple[BaseMemoryService, BaseMemoryService], method: str, **kwargs: Any
) -> tuple[Any, Any]:
    ours, reference = pair
    return (
        await getattr(ours, method)(**kwargs),
        await getattr(reference, method)(**kwargs),
    )


async def search(
    pair: tuple[BaseMemoryService, BaseMemoryService], query: str, user: str = ANA, app: str = APP
) -> tuple[list[MemoryEntry], list[MemoryEntry]]:
    ours, reference = await both(pair, "search_memory", app_name=app, user_id=user, query=query)
    return ours.memories, reference.memories


# against InMemoryMemoryService -------------------------------------------------------------
@pytest.mark.parametrize("kind", CLIENTS)
def test_sessions_are_remembered_as_the_reference_remembers_them(
    kind: str, tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    async def scenario(client: Any) -> None:
        pair = (MemstrataMemoryService(client), InMemoryMemoryService())
        for s in (FIRST, SECOND, BENS, session("s4", [])):
            await both(pair, "add_session_to_memory", session=s)
        # a word every event of Ana's holds: both return all of them, thoughts left out
        ours, reference = await search(pair, "risotto river Marta")
        assert seen(ours) == seen(reference) and len(reference) == 4
        spoken = ("A splash of white wine helps the risotto.",)  # its thought left out
        assert ("e4", "cook", datetime.fromtimestamp(1003).isoformat(), spoken) in seen(ours)
        # one memory alone shares the query's words: both put it first
        for query, eid in [("Porto", "e5"), ("white wine splash", "e4"), ("Fridays", "e1")]:
            ours, reference = await search(pair, query)
            assert reference[0].id == ours[0].id == eid
            assert ours[0].content == reference[0].content
        # each memory is an episode of the user's namespace, in its session
        stored = (await call(client.list(namespace="kitchen/ana"))).episodes
        assert [(e.id, e.session, e.speaker, e.role) for e in stored] == [
            ("e1", "s1", "user", "user"),
            ("e3", "s1", "cook", "assistant"),
            ("e4", "s1", "cook", "assistant"),
            ("e5", "s2", "user", "user"),
        ]
        assert sorted(await call(client.namespaces())) == ["kitchen/ana", "kitchen/ben"]
        # users are apart
        ours, reference = await search(pair, "secret recipe")
        assert "e6" not in {m.id for m in ours} | {m.id for m in reference}
        ours, reference = await search(pair, "secret recipe", user=BEN)
        assert [m.id for m in ours] == [m.id for m in reference] == ["e6"]
        ours, reference = await search(pair, "risotto", user="carla")
        assert ours == reference == []
        ours, reference = await search(pair, "   ")
        assert ours == reference == []

    run_over(kind, tmp_path, embedder, scenario)


def test_a_slash_in_a_name_reaches_no_other_user(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    async def scenario(client: Any) -> None:
        pair = (MemstrataMemoryService(client), InMemoryMemoryService())
        slashed = session("s9", [event("e9", "This is a secret.")], user="user", app="app/other")
        await both(pair, "add_session_to_memory", session=slashed)
        ours, reference = await search(pair, "secret", user="other/user", app="app")
        assert ours == reference == []
        ours, reference = await search(pair, "secret", user="user", app="app/other")
        assert [m.id for m in ours] == [m.id for m in reference] == ["e9"]
        assert await call(client.namespaces()) == ["app%2Fother/user"]

    run_over("memory", tmp_path, embedder, scenario)


@pytest.mark.parametrize("kind", CLIENTS)
def test_events_added_deleted_and_rewound_as_in_the_reference(
    kind: str, tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    async def scenario(client: Any) -> None:
        pair = (MemstrataMemoryService(client), InMemoryMemoryService())
        mine = pair[0]
        await both(pair, "add_session_to_memory", session=FIRST)
        # events as a delta: appended, an event already held left as it was
        delta = [event("e7", "Marta bakes bread every morning.", at=1004),
                 event("e1", "A different text under a stored id.", at=1005)]  # fmt: skip
        await both(pair, "add_events_to_memory", app_name=APP, user_id=ANA, events=delta,
                   session_id="s1")  # fmt: skip
        await both(pair, "add_events_to_memory", app_name=APP, user_id=ANA,
                   events=[event("e8", "Risotto needs arborio rice.", at=1006)])  # fmt: skip
        ours, reference = await search(pair, "risotto bread Marta rice")
        assert seen(ours) == seen(reference) and len(reference) == 5
        (e1,) = await call(client.get("e1", namespace="kitchen/ana"))
        assert e1.text == "I cook risotto with mushrooms on Fridays."
        (e8,) = await call(client.get("e8", namespace="kitchen/ana"))
        assert e8.session is None  # events without a session
        # a deleted memory goes, and adding its session again does not bring it back
        await both(pair, "delete_memory", app_name=APP, user_id=ANA, memory_id="e3")
        await both(pair, "delete_memory", app_name=APP, user_id=ANA, memory_id="nothing")
        await both(pair, "add_session_to_memory", session=FIRST)
        ours, reference = await search(pair, "risotto bread Marta rice")
        assert seen(ours) == seen(reference) and "e3" not in {m.id for m in ours}
        assert await call(client.get("e3", namespace="kitchen/ana")) == []
        # a rewind takes back the events of an invocation and those after it
        rewound = session(
            "s1",
            [
                *FIRST.events,
                event("e10", "Actually I hate mushrooms.", at=1010, inv="inv-x"),
                event("e11", "Noted: no mushrooms.", "cook", at=1011, inv="inv-x"),
                Event(
                    id="e12",
                    invocation_id="inv-y",
                    author="user",
                    timestamp=1012,
                    actions=EventActions(rewind_before_invocation_id="inv-x"),
                ),  # fmt: skip
            ],
        )
        await both(pair, "add_session_to_memory", session=rewound)
        ours, reference = await search(pair, "mushrooms risotto")
        assert seen(ours) == seen(reference)
        assert not {"e10", "e11"} & {m.id for m in ours}
        # a session added again is the session as it is now: its events no longer in it
        # go, those added to it as a delta (e7) too
        shorter = session("s1", [FIRST.events[0]])
        await both(pair, "add_session_to_memory", session=shorter)
        ours, reference = await search(pair, "risotto bread Marta rice wine")
        assert seen(ours) == seen(reference)
        assert sorted(m.id for m in ours) == ["e1", "e8"]
        assert await mine.search_memory(app_name=APP, user_id=BEN, query="x") == (
            await pair[1].search_memory(app_name=APP, user_id=BEN, query="x")
        )

    run_over(kind, tmp_path, embedder, scenario)


def test_memories_written_directly(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    """``add_memory``, which ADK's in-memory service does not have: entries kept with
    their id, author, time and custom metadata; an entry with a stored id replaces it."""

    async def scenario(client: Any) -> None:
        service = MemstrataMemoryService(client)
        with pytest.raises(NotImplementedError):
            await InMemoryMemoryService().add_memory(app_name=APP, user_id=ANA, memories=[])
        note = MemoryEntry(
            id="m1",
            content=types.Content(role="user", parts=[types.Part(text="Ana is vegetarian.")]),
            author="user",
            timestamp="2026-05-01T10:00:00",
            custom_metadata={"topic": "food"},
        )
        await service.add_memory(app_name=APP, user_id=ANA, memories=[note],
                                 custom_metadata={"via": "test"})  # fmt: skip
        (found,) = (await service.search_memory(app_name=APP, user_id=ANA, query="diet")).memories
        assert (found.id, found.author, found.timestamp) == ("m1", "user", "2026-05-01T10:00:00")
        assert found.content == note.content
        assert found.custom_metadata["topic"] == "food" and found.custom_metadata["via"] == "test"
        assert found.custom_metadata["memstrata"]["sources"] == ["m1"]
        newer = note.model_copy(update={"content": types.Content(
            role="user", parts=[types.Part(text="Ana is vegan now.")])})  # fmt: skip
        await service.add_memory(app_name=APP, user_id=ANA, memories=[newer])
        (found,) = (await service.search_memory(app_name=APP, user_id=ANA, query="diet")).memories
        assert found.content.parts[0].text == "Ana is vegan now."
        assert [v.text for v in await call(client.history("m1", namespace="kitchen/ana"))] == [
            "Ana is vegetarian."
        ]

    run_over("memory", tmp_path, embedder, scenario)


def test_an_entry_names_its_source_episode(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    async def scenario(client: Any) -> None:
        service = MemstrataMemoryService(client, k=2)
        await service.add_session_to_memory(FIRST)
        await service.add_session_to_memory(SECOND)
        found = (await service.search_memory(app_name=APP, user_id=ANA, query="Porto")).memories
        assert len(found) == 2
        source = found[0].custom_metadata["memstrata"]
        assert source["sources"] == ["e5"] and source["kind"] == "episode"
        assert source["namespace"] == "kitchen/ana" and source["session"] == "s2"
        (episode,) = await call(client.get(source["sources"], namespace="kitchen/ana"))
        assert episode.text == found[0].content.parts[0].text

    run_over("memory", tmp_path, embedder, scenario)


def test_bad_input_stores_nothing(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    async def scenario(client: Any) -> None:
        service = MemstrataMemoryService(client)
        with pytest.raises(InputValidationError, match="control character"):
            await service.add_session_to_memory(session("s1", FIRST.events, user="ana\nben"))
        with pytest.raises(InputValidationError, match="non-empty"):
            await service.search_memory(app_name="", user_id=ANA, query="x")
        with pytest.raises(InputValidationError, match="not JSON"):
            await service.add_events_to_memory(
                app_name=APP, user_id=ANA, events=FIRST.events, custom_metadata={"at": object()}
            )
        with pytest.raises(InputValidationError, match="not JSON"):
            bad = MemoryEntry(content=types.Content(parts=[types.Part(text="x")]),
                              custom_metadata={"n": float("nan")})  # fmt: skip
            await service.add_memory(app_name=APP, user_id=ANA, memories=[bad])
        assert await call(client.namespaces()) == []

    run_over("memory", tmp_path, embedder, scenario)


# an agent end to end ------------------------------------------------------------------------
class Scripted(BaseLlm):
    """A model that answers from a script and keeps every request it is sent."""

    replies: list[LlmResponse] = Field(default_factory=list)
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request.model_copy(deep=True))
        yield self.replies.pop(0)


def said(text: str) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


def calls(name: str, **args: Any) -> LlmResponse:
    part = types.Part(function_call=types.FunctionCall(name=name, args=args))
    return LlmResponse(content=types.Content(role="model", parts=[part]))


async def turn(runner: Runner, sessions: InMemorySessionService, sid: str, text: str) -> str:
    if await sessions.get_session(app_name=APP, user_id=ANA, session_id=sid) is None:
        await sessions.create_session(app_name=APP, user_id=ANA, session_id=sid)
    message = types.Content(role="user", parts=[types.Part(text=text)])
    final = ""
    async for e in runner.run_async(user_id=ANA, session_id=sid, new_message=message):
        if e.content and e.content.parts and e.content.parts[0].text:
            final = e.content.parts[0].text
    return final


@pytest.mark.parametrize("kind", CLIENTS)
def test_an_agent_recalls_a_memory_with_its_episode(
    kind: str, tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    async def scenario(client: Any) -> None:
        memories, sessions = MemstrataMemoryService(client), InMemorySessionService()
        model = Scripted(
            model="scripted",
            replies=[
                said("Noted."),
                said("Noted."),
                said("Mushroom risotto, no meat."),
                calls("load_memory", query="vegetarian diet"),
                said("You are vegetarian."),
            ],  # fmt: skip
        )
        agent = LlmAgent(name="cook", model=model, instruction="Cook for the user.",
                         tools=[preload_memory])  # fmt: skip
        runner = Runner(app_name=APP, agent=agent, session_service=sessions,
                        memory_service=memories)  # fmt: skip
        await turn(runner, sessions, "s1", "I am vegetarian since May.")
        await turn(runner, sessions, "s1", "My sister lives in Porto.")
        first = await sessions.get_session(app_name=APP, user_id=ANA, session_id="s1")
        assert first is not None
        await memories.add_session_to_memory(first)
        (vegetarian,) = [e.id for e in first.events if e.content and e.content.parts
                         and e.content.parts[0].text == "I am vegetarian since May."]  # fmt: skip

        # a new conversation: preload_memory puts the recalled turns before the question
        reply = await turn(runner, sessions, "s2", "What food should you cook for me?")
        assert reply == "Mushroom risotto, no meat."
        shown = "\n".join(p.text or "" for c in model.requests[-1].contents for p in c.parts or [])
        assert "<PAST_CONVERSATIONS>" in shown and "user: I am vegetarian since May." in shown
        found = await memories.search_memory(app_name=APP, user_id=ANA, query="food for me")
        assert found.memories[0].id == vegetarian

        # load_memory: the model asks, and is shown each memory with its episode id
        agent.tools = [load_memory]
        reply = await turn(runner, sessions, "s3", "Remind me what I eat?")
        assert reply == "You are vegetarian."
        (response,) = [
            p.function_response
            for c in model.requests[-1].contents
            for p in c.parts or []
            if p.function_response
        ]
        assert response.name == "load_memory"
        best = response.response["result"].memories[0]
        assert best.id == vegetarian
        assert best.content.parts[0].text == "I am vegetarian since May."
        assert best.custom_metadata["memstrata"]["sources"] == [vegetarian]
        (episode,) = await call(client.get(vegetarian, namespace="kitchen/ana"))
        assert episode.text == "I am vegetarian since May." and episode.session == "s1"
        alone = await memories.search_memory(app_name=APP, user_id=BEN, query="food")
        assert alone.memories == []  # another user's memories are not his

    run_over(kind, tmp_path, embedder, scenario)


def test_importing_memstrata_loads_no_framework() -> None:
    code = (
        "import sys, memstrata, memstrata.integrations; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'google' and 'adk' in m))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_method_of_the_interface_is_its_own() -> None:
    """The abstract methods and those ADK's base class leaves unsupported."""
    assert not MemstrataMemoryService.__abstractmethods__
    methods = [m for m in vars(BaseMemoryService) if not m.startswith("_")]
    assert sorted(methods) == sorted(
        ["add_session_to_memory", "add_events_to_memory", "add_memory", "search_memory",
         "delete_memory"]
    )  # fmt: skip
    assert all(m in vars(MemstrataMemoryService) for m in methods)
