"""LLM calls made through a Memory are accounted in its store and shown by ``stats``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from memstrata import Config, Memory
from memstrata.embed import MiniLMEmbedder
from memstrata.errors import ConfigError
from memstrata.llm import LLMClient, LLMOutputError, Message, ScriptedBackend


class Topic(BaseModel):
    topic: str = Field(max_length=80)
    keywords: list[str] = Field(default_factory=list, max_length=5)


PROMPT = [
    Message(role="system", content="Answer with JSON only."),
    Message(role="user", content='Give the topic of: "We adopted a greyhound called Pepper."'),
]


def test_failures_are_counted_and_visible_in_stats(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    with Memory.open(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add("We adopted a greyhound called Pepper.", namespace="ns")
        client = LLMClient(
            ScriptedBackend(["not json at all", "{still not", "nope"]),
            usage=memory.store,
            max_retries=2,
            namespace="ns",
        )
        with pytest.raises(LLMOutputError):
            asyncio.run(client.structured(PROMPT, Topic, stage="unit.topic"))
        ok = LLMClient(ScriptedBackend([{"topic": "pets"}]), usage=memory.store, namespace="ns")
        assert asyncio.run(ok.structured(PROMPT, Topic, stage="unit.topic")).topic == "pets"
        usage = memory.stats("ns")["llm"]["unit.topic"]
        assert usage["calls"] == 2 and usage["failures"] == 1
        assert usage["prompt_tokens"] > 0


def test_no_llm_configured_means_heuristic_tier(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    with Memory.open(tmp_path / "m.db", embedder=embedder) as memory:
        assert memory.llm is None
    cfg = Config(store=str(tmp_path / "x.db"), llm={"kind": "openai"})
    with (
        Memory.open(config=cfg, embedder=embedder) as memory,
        pytest.raises(ConfigError, match="needs base_url and model"),
    ):
        _ = memory.llm


@pytest.mark.slow
def test_configured_gguf_backend_end_to_end(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    """The in-process GGUF model (SmolLM2 from its wheel) through the configured client."""
    cfg = Config(store=str(tmp_path / "g.db"), llm={"kind": "gguf"})
    with Memory.open(config=cfg, embedder=embedder) as memory:
        memory.add("We adopted a greyhound called Pepper.", namespace="ns")
        client = memory.llm
        assert client is not None
        first = asyncio.run(client.structured(PROMPT, Topic, stage="e2e.topic", max_tokens=64))
        again = asyncio.run(client.structured(PROMPT, Topic, stage="e2e.topic", max_tokens=64))
        assert isinstance(first, Topic) and first == again
        usage = memory.stats()["llm"]["e2e.topic"]
        assert usage["calls"] == 2 and usage["cached"] == 1 and usage["failures"] == 0
        assert usage["prompt_tokens"] > 0
    assert Path(str(tmp_path / "g.db") + ".llm-cache").exists()
