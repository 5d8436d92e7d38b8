"""GGUFBackend end to end: the bundled SmolLM2 model, in process, grammar-constrained."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from memstrata.llm import (
    GGUFBackend,
    LLMBackendError,
    LLMClient,
    LLMError,
    MemoryUsageSink,
    Message,
    make_backend,
)

pytestmark = pytest.mark.slow


class Names(BaseModel):
    names: list[Annotated[str, Field(max_length=24)]] = Field(max_length=4)


PROMPT = [
    Message(role="system", content="You reply with JSON only."),
    Message(role="user", content='List three fruit names as {"names": [...]}.'),
]


@pytest.fixture(scope="module")
def backend(smollm2_gguf: Path) -> Iterator[GGUFBackend]:
    gguf = GGUFBackend(n_ctx=1024, n_threads=1)
    assert gguf.model_path == smollm2_gguf
    yield gguf
    gguf.close()


def test_structured_call_returns_valid_instance(backend: GGUFBackend) -> None:
    usage = MemoryUsageSink()
    client = LLMClient(backend, usage=usage)
    result = asyncio.run(client.structured(PROMPT, Names, stage="extract", max_tokens=96))
    assert isinstance(result, Names) and len(result.names) <= 4
    (rec,) = usage.records
    assert rec.ok and rec.backend == "gguf" and rec.model == backend.model
    assert rec.prompt_tokens > 0 and rec.completion_tokens > 0
    # a thread count given bounds the prompt's evaluation too, not only generation
    params = backend._llama.context_params
    assert params.n_threads == 1 and params.n_threads_batch == 1


class Topic(BaseModel):
    """Unbounded fields: the client's default bounds must compile as a llama.cpp grammar."""

    topic: str
    keywords: list[str] = Field(default_factory=list)


def test_default_bounds_compile_in_llama_cpp(backend: GGUFBackend) -> None:
    usage = MemoryUsageSink()
    prompt = [
        Message(role="system", content="Answer with JSON only."),
        Message(role="user", content="Give the topic of: We adopted a greyhound called Pepper."),
    ]
    result = asyncio.run(
        LLMClient(backend, usage=usage).structured(prompt, Topic, stage="topic", max_tokens=64)
    )
    assert isinstance(result, Topic)
    assert usage.records[0].ok and usage.records[0].completion_tokens > 0


def test_schema_beyond_grammar_limit_is_refused_not_crashed(backend: GGUFBackend) -> None:
    schema = {"type": "string", "maxLength": 5000}
    with pytest.raises(LLMBackendError, match="grammar limit of 1000"):
        asyncio.run(backend.complete(PROMPT, json_schema=schema, max_tokens=8, temperature=0.0))


def test_text_call_and_concurrent_requests_share_one_model(backend: GGUFBackend) -> None:
    usage = MemoryUsageSink()
    client = LLMClient(backend, usage=usage, concurrency=2)

    async def run() -> list[str]:
        calls = [client.text(PROMPT, stage="chat", max_tokens=16) for _ in range(2)]
        return await asyncio.gather(*calls)

    outputs = asyncio.run(run())
    assert all(isinstance(text, str) for text in outputs)
    assert len(usage.records) == 2 and all(r.completion_tokens > 0 for r in usage.records)


def test_factory_and_bad_path(tmp_path: Path) -> None:
    with pytest.raises(LLMError, match="not found"):
        make_backend("gguf", model_path=str(tmp_path / "missing.gguf"))
