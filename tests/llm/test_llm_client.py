"""LLMClient behaviour (retries, accounting, caching) driven by ScriptedBackend."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from memstrata.llm import (
    LLMBackendError,
    LLMClient,
    LLMOutputError,
    MemoryUsageSink,
    Message,
    ResponseCache,
    ScriptedBackend,
    UsageSink,
    make_backend,
)
from memstrata.llm.scripted import ScriptStep


class Names(BaseModel):
    names: list[str] = Field(max_length=5)


PROMPT = [
    Message(role="system", content="Answer in JSON."),
    Message(role="user", content="Name two fruits."),
]
VALID = {"names": ["apple", "pear"]}


def _client(backend: ScriptedBackend, usage: MemoryUsageSink, **kw: Any) -> LLMClient:
    return LLMClient(backend, usage=usage, backoff=0.0, **kw)


def test_valid_first_try() -> None:
    backend, usage = ScriptedBackend([VALID]), MemoryUsageSink()
    result = asyncio.run(_client(backend, usage).structured(PROMPT, Names, stage="extract"))
    assert result == Names(names=["apple", "pear"])
    (rec,) = usage.records
    assert (rec.ok, rec.cached, rec.attempts, rec.error) == (True, False, 1, None)
    assert rec.stage == "extract" and rec.backend == "scripted" and rec.model == "scripted"
    assert rec.prompt_tokens == 6 and rec.completion_tokens == 3
    assert rec.latency_ms >= 0 and len(rec.request_hash) == 64
    # the bounded schema was sent to the backend
    schema = backend.requests[0].json_schema
    assert schema is not None and schema["properties"]["names"]["maxItems"] == 5
    assert schema["additionalProperties"] is False


def test_malformed_then_valid_is_retried_with_the_error_quoted() -> None:
    backend, usage = ScriptedBackend(['{"fruits": ["apple"]}', VALID]), MemoryUsageSink()
    result = asyncio.run(_client(backend, usage).structured(PROMPT, Names, stage="extract"))
    assert result.names == ["apple", "pear"]
    (rec,) = usage.records
    assert rec.ok and rec.attempts == 2
    assert rec.completion_tokens == 2 + 3  # summed over both attempts
    retry = backend.requests[1].messages
    assert retry[: len(PROMPT)] == PROMPT
    assert retry[-2] == Message(role="assistant", content='{"fruits": ["apple"]}')
    assert retry[-1].role == "user" and "none of the fields of Names" in retry[-1].content
    assert rec.outcome == "repaired" and rec.dropped == {}


def test_always_malformed_raises_output_error_with_one_failure_record(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A reply with nothing usable is asked again once, whatever max_retries says (that
    # one is for backend errors), then the call fails.
    backend, usage = ScriptedBackend(["nope", "{}", "unused"]), MemoryUsageSink()
    client = _client(backend, usage, max_retries=2)
    with (
        caplog.at_level(logging.WARNING, logger="memstrata.llm"),
        pytest.raises(LLMOutputError, match="after 2 attempts") as info,
    ):
        asyncio.run(client.structured(PROMPT, Names, stage="extract"))
    assert info.value.raw_text == "{}"
    assert len(backend.requests) == 2 and backend.remaining == 1
    (rec,) = usage.records
    assert not rec.ok and rec.attempts == 2 and rec.outcome == "failed"
    assert rec.error is not None and rec.error.startswith("LLMOutputError")
    assert rec.completion_tokens == 1 + 1
    assert any("stage=extract" in r.getMessage() for r in caplog.records)


def test_retryable_backend_exceptions_then_success() -> None:
    script: list[ScriptStep] = [
        TimeoutError("slow"),
        LLMBackendError("HTTP 503", status=503, retryable=True),
        VALID,
    ]
    backend, usage = ScriptedBackend(script), MemoryUsageSink()
    result = asyncio.run(_client(backend, usage).structured(PROMPT, Names, stage="extract"))
    assert result.names == ["apple", "pear"]
    (rec,) = usage.records
    assert rec.ok and rec.attempts == 3 and rec.completion_tokens == 3


def test_non_retryable_backend_error_fails_at_once() -> None:
    script: list[ScriptStep] = [LLMBackendError("HTTP 401", status=401), VALID]
    backend, usage = ScriptedBackend(script), MemoryUsageSink()
    with pytest.raises(LLMBackendError, match="401") as info:
        asyncio.run(_client(backend, usage).structured(PROMPT, Names, stage="extract"))
    assert info.value.status == 401
    assert backend.remaining == 1
    (rec,) = usage.records
    assert not rec.ok and rec.attempts == 1 and rec.error == "LLMBackendError: HTTP 401"


def test_backend_errors_exhaust_retries() -> None:
    backend, usage = ScriptedBackend([ConnectionResetError("reset")] * 3), MemoryUsageSink()
    with pytest.raises(LLMBackendError, match="ConnectionResetError: reset"):
        asyncio.run(_client(backend, usage, max_retries=2).structured(PROMPT, Names, stage="s"))
    (rec,) = usage.records
    assert not rec.ok and rec.attempts == 3 and rec.prompt_tokens == 0


def test_unexpected_backend_exception_is_wrapped_not_swallowed() -> None:
    backend, usage = ScriptedBackend([KeyError("boom")]), MemoryUsageSink()
    with pytest.raises(LLMBackendError, match="KeyError") as info:
        asyncio.run(_client(backend, usage).structured(PROMPT, Names, stage="s"))
    assert isinstance(info.value.__cause__, KeyError)
    assert len(usage.records) == 1 and not usage.records[0].ok


def test_script_running_out_is_a_clear_error() -> None:
    backend, usage = ScriptedBackend([]), MemoryUsageSink()
    with pytest.raises(LLMBackendError, match="script exhausted"):
        asyncio.run(_client(backend, usage).text(PROMPT, stage="s"))


def test_cache_hit_skips_backend(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    backend, usage = ScriptedBackend([VALID]), MemoryUsageSink()
    client = _client(backend, usage, cache=cache)

    async def twice() -> tuple[Names, Names]:
        first = await client.structured(PROMPT, Names, stage="extract")
        second = await client.structured(PROMPT, Names, stage="extract")
        return first, second

    first, second = asyncio.run(twice())
    assert first == second
    assert len(backend.requests) == 1
    miss, hit = usage.records
    assert not miss.cached and miss.completion_tokens == 3
    assert hit.cached and hit.ok and hit.attempts == 0
    assert hit.prompt_tokens == hit.completion_tokens == 0
    assert hit.request_hash == miss.request_hash

    # a fresh client and connection on the same file also hits
    other_backend = ScriptedBackend([])
    other = LLMClient(other_backend, cache=ResponseCache(tmp_path / "llm.sqlite"))
    assert asyncio.run(other.structured(PROMPT, Names, stage="extract")) == first
    assert other_backend.requests == []


def test_cache_key_depends_on_request(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    backend = ScriptedBackend([VALID, {"names": ["kiwi"]}, {"names": ["fig"]}])
    client = LLMClient(backend, cache=cache)

    async def run() -> list[Names]:
        return [
            await client.structured(PROMPT, Names, stage="a"),
            await client.structured(PROMPT[:1], Names, stage="a"),
            await client.structured(PROMPT, Names, stage="a", max_tokens=7),
        ]

    assert [r.names for r in asyncio.run(run())] == [["apple", "pear"], ["kiwi"], ["fig"]]
    assert len(cache) == 3


def test_failures_are_not_cached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    backend = ScriptedBackend(["bad"])
    with pytest.raises(LLMOutputError):
        asyncio.run(
            LLMClient(backend, cache=cache, output_retries=0).structured(PROMPT, Names, stage="s")
        )
    assert len(cache) == 0


def test_only_the_validated_response_is_cached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    backend = ScriptedBackend(["```json\nbad", '```json\n{"names": ["a"]}\n```'])
    client = LLMClient(backend, cache=cache, backoff=0.0)
    assert asyncio.run(client.structured(PROMPT, Names, stage="s")).names == ["a"]
    assert len(cache) == 1
    assert asyncio.run(client.structured(PROMPT, Names, stage="s")).names == ["a"]
    assert len(backend.requests) == 2


def test_text_has_the_same_accounting() -> None:
    backend = ScriptedBackend([lambda msgs: f"echo {msgs[-1].content}"])
    usage = MemoryUsageSink()
    out = asyncio.run(_client(backend, usage).text(PROMPT, stage="summarize", max_tokens=32))
    assert out == "echo Name two fruits."
    assert backend.requests[0].json_schema is None and backend.requests[0].max_tokens == 32
    (rec,) = usage.records
    assert rec.stage == "summarize" and rec.ok and rec.completion_tokens == 4


def test_stage_names_namespace_and_summary() -> None:
    backend = ScriptedBackend([VALID, VALID, "x", "y", "hello world"])
    usage = MemoryUsageSink()
    client = _client(backend, usage, namespace="agent-7")

    async def run() -> None:
        await client.structured(PROMPT, Names, stage="extract")
        await client.structured(PROMPT, Names, stage="extract")
        with pytest.raises(LLMOutputError):
            await client.structured(PROMPT, Names, stage="consolidate")
        await client.text(PROMPT, stage="summarize")

    asyncio.run(run())
    assert [r.stage for r in usage.records] == ["extract", "extract", "consolidate", "summarize"]
    assert {r.namespace for r in usage.records} == {"agent-7"}
    summary = usage.summary()
    assert set(summary) == {"extract", "consolidate", "summarize"}
    assert summary["extract"]["calls"] == 2 and summary["extract"]["failures"] == 0
    assert summary["extract"]["prompt_tokens"] == 12
    assert summary["extract"]["completion_tokens"] == 6
    assert summary["consolidate"]["calls"] == 1 and summary["consolidate"]["failures"] == 1
    assert summary["consolidate"]["attempts"] == 2
    assert summary["extract"]["kept"] == 2 and summary["consolidate"]["kept"] == 0
    assert summary["summarize"]["completion_tokens"] == 2
    assert summary["extract"]["latency_ms"] >= summary["extract"]["mean_latency_ms"] >= 0


def test_concurrent_calls_and_reuse_across_event_loops() -> None:
    backend = ScriptedBackend([VALID] * 12)
    usage = MemoryUsageSink()
    client = _client(backend, usage, concurrency=2)

    async def batch() -> list[Names]:
        calls = [client.structured(PROMPT, Names, stage="batch") for _ in range(6)]
        return await asyncio.gather(*calls)

    assert len(asyncio.run(batch())) == 6
    assert len(asyncio.run(batch())) == 6  # a second loop: per-loop semaphore
    assert len(usage.records) == 12 and all(r.ok for r in usage.records)


def test_memory_sink_satisfies_protocol_and_factory() -> None:
    assert isinstance(MemoryUsageSink(), UsageSink)
    backend = make_backend("scripted", responses=["hi"])
    assert isinstance(backend, ScriptedBackend)
    with pytest.raises(ValueError, match="unknown LLM backend kind 'nope'"):
        make_backend("nope")


def test_invalid_client_arguments() -> None:
    with pytest.raises(ValueError):
        LLMClient(ScriptedBackend([]), max_retries=-1)
    with pytest.raises(ValueError):
        LLMClient(ScriptedBackend([]), concurrency=0)
