"""A crew with memstrata as its memory's storage: an agent (a scripted ``BaseLLM`` that
keeps every prompt) is shown a memory recalled through memstrata, with the episode it
is, and what the task taught is saved back as a new episode; in process and over a
served store."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.memory.analyze import (
    ConsolidationPlan,
    ExtractedMemories,
    ExtractedMetadata,
    MemoryAnalysis,
)
from crewai.memory.unified_memory import Memory as CrewMemory
from pydantic import Field

from memstrata import Memory, RemoteMemory
from memstrata.embed import MiniLMEmbedder
from memstrata.integrations.crewai import MemstrataStorage


class Scripted(BaseLLM):
    """Answers a task from a script, and the memory's structured questions with fixed
    answers; keeps every prompt it is sent."""

    replies: list[str] = Field(default_factory=list)
    structured: dict[str, Any] = Field(default_factory=dict)
    seen: list[Any] = Field(default_factory=list)

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None,
             available_functions: Any = None, from_task: Any = None, from_agent: Any = None,
             response_model: Any = None) -> Any:  # fmt: skip
        if response_model is not None:
            return self.structured[response_model.__name__]
        self.seen.append(messages)
        return self.replies.pop(0)

    def supports_function_calling(self) -> bool:
        return True


@pytest.fixture(params=["memory", "remote"])
def client(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: MiniLMEmbedder
) -> Iterator[tuple[Any, str]]:
    if request.param == "memory":
        with Memory.open(tmp_path / "m.db", embedder=embedder) as memory:
            yield memory, "crewai:"
        return
    url = os.environ.get("CREWAI_SUITE_STORE_URL")
    if not url:
        pytest.skip("no served store: tests/integrations/test_crewai.py serves one")
    with RemoteMemory(url) as remote:
        yield remote, f"crew-{uuid.uuid4().hex[:8]}:"


def test_a_crew_recalls_a_memory_with_its_episode_and_saves_what_it_learnt(
    client: tuple[Any, str], embedder: MiniLMEmbedder
) -> None:
    memory, prefix = client
    storage = MemstrataStorage(memory, prefix=prefix, embedder=embedder)
    llm = Scripted(
        model="scripted",
        replies=["A mushroom risotto, no meat."],
        structured={
            "ExtractedMemories": ExtractedMemories(
                memories=["Ana was cooked a mushroom risotto for dinner."]
            ),
            "MemoryAnalysis": MemoryAnalysis(
                suggested_scope="/user/ana",
                categories=["food"],
                importance=0.6,
                extracted_metadata=ExtractedMetadata(),
            ),  # fmt: skip
            "ConsolidationPlan": ConsolidationPlan(actions=[], insert_new=True),
        },
    )
    crew_memory = CrewMemory(storage=storage, embedder=storage.embedder, llm=llm)
    crew_memory.remember("Ana is vegetarian since May.", scope="/user/ana",
                         categories=["food"], importance=0.9)  # fmt: skip
    crew_memory.remember("Ana's sister lives in Porto.", scope="/user/ana",
                         categories=["family"], importance=0.5)  # fmt: skip
    (vegetarian,) = [e.id for e in memory.list(namespace=prefix + "/user/ana").episodes
                     if e.text == "Ana is vegetarian since May."]  # fmt: skip

    cook = Agent(role="Cook", goal="Cook what Ana can eat", backstory="A home cook.", llm=llm)
    task = Task(description="What should you cook for Ana tonight?",
                expected_output="One dish", agent=cook)  # fmt: skip
    out = Crew(agents=[cook], tasks=[task], memory=crew_memory).kickoff()
    crew_memory.drain_writes()

    assert out.raw == "A mushroom risotto, no meat."
    prompt = "\n".join(str(m.get("content", "")) for m in llm.seen[0])
    assert "Ana is vegetarian since May." in prompt
    assert f"'episode': '{vegetarian}'" in prompt  # the memory names its episode
    (episode,) = memory.get(vegetarian, namespace=prefix + "/user/ana")
    assert episode.text == "Ana is vegetarian since May."
    # what the task taught is an episode too, in the scope the analysis gave it
    learnt = [e.text for e in memory.list(namespace=prefix + "/user/ana").episodes]
    assert "Ana was cooked a mushroom risotto for dinner." in learnt and len(learnt) == 3
