"""The fault-injecting backend, and the HTTP backend against a loopback server that
misbehaves (429, 5xx, dropped connections, slow replies)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Annotated, Any, Literal

import pytest
from fake_openai import EXHAUSTED, FakeOpenAI, Reply
from pydantic import BaseModel, Field, ValidationError

from memstrata.config import Config
from memstrata.errors import ConfigError
from memstrata.factory import make_llm
from memstrata.llm import (
    FAULTS,
    ChaosBackend,
    Completion,
    LLMBackendError,
    LLMCallRecord,
    LLMClient,
    MemoryUsageSink,
    Message,
    OpenAICompatibleBackend,
    ScriptedBackend,
    bounded_json_schema,
    make_backend,
)
from memstrata.llm.chaos import TEXT_FAULTS
from memstrata.llm.openai_http import retry_after
from memstrata.store import open_store

PROMPT = [Message(role="user", content="Who was there, and how did it go?")]


class Person(BaseModel):
    name: Annotated[str, Field(max_length=40)]
    role: Literal["host", "guest"]


class Meeting(BaseModel):
    people: list[Person] = Field(max_length=3)
    topics: list[str] = Field(max_length=2)
    mood: Literal["calm", "tense"]
    note: str | None


SCHEMA = bounded_json_schema(Meeting)
GOOD = Meeting(
    people=[Person(name="Ada", role="host"), Person(name="Lin", role="guest")],
    topics=["budget"],
    mood="calm",
    note="short",
).model_dump_json()


def _chaos(faults: list[str] | None = None, *, seed: int = 7, rate: float = 1.0) -> ChaosBackend:
    inner = ScriptedBackend([GOOD] * 200)
    return ChaosBackend(inner, seed=seed, rate=rate, faults=faults, slow_s=0.0, timeout_s=0.0)


def _ask(backend: ChaosBackend, schema: dict[str, Any] | None = SCHEMA) -> Completion:
    return asyncio.run(
        backend.complete(PROMPT, json_schema=schema, max_tokens=256, temperature=0.0)
    )


# --- ChaosBackend ------------------------------------------------------------------------


def test_same_seed_same_damage() -> None:
    async def replies(backend: ChaosBackend) -> list[str]:
        out = []
        for _ in range(60):
            try:
                done = await backend.complete(
                    PROMPT, json_schema=SCHEMA, max_tokens=256, temperature=0.0
                )
                out.append(f"{done.finish_reason}:{done.text}")
            except Exception as exc:
                out.append(type(exc).__name__)
        return out

    first, second, other = _chaos(rate=0.5), _chaos(rate=0.5), _chaos(seed=8, rate=0.5)
    a, b, c = (asyncio.run(replies(x)) for x in (first, second, other))
    assert a == b and first.injected == second.injected and first.sent == second.sent
    assert a != c
    assert 0 < first.injected.total() < 60
    assert first.sent == 60 - first.injected["timeout"]


def test_rate_zero_passes_replies_through() -> None:
    backend = _chaos(rate=0.0)
    assert all(_ask(backend).text == GOOD for _ in range(20))
    assert backend.injected.total() == 0 and backend.sent == 20


def test_over_bound_exceeds_the_schema_bound() -> None:
    backend = _chaos(["over_bound"])
    for _ in range(10):
        data = json.loads(_ask(backend).text)
        grown = [
            key
            for key in ("people", "topics")
            if len(data[key]) > SCHEMA["properties"][key]["maxItems"]
        ]
        assert len(grown) == 1
        key = grown[0]
        original = json.loads(GOOD)[key]
        assert data[key][: len(original)] == original  # appended, not replaced
    assert backend.injected == {"over_bound": 10}


def test_prose_and_fence_wrap_the_json() -> None:
    prose = _ask(_chaos(["prose"])).text
    assert GOOD in prose and not prose.startswith("{") and not prose.endswith("}")
    fenced = _ask(_chaos(["fence"])).text
    assert fenced == f"```json\n{GOOD}\n```"


def test_wrong_type_breaks_validation() -> None:
    backend = _chaos(["wrong_type"])
    for _ in range(20):
        text = _ask(backend).text
        json.loads(text)  # still JSON
        with pytest.raises(ValidationError):
            Meeting.model_validate_json(text)
    assert backend.injected == {"wrong_type": 20}


def test_unknown_enum_is_outside_the_enum() -> None:
    backend = _chaos(["unknown_enum"])
    for _ in range(10):
        data = json.loads(_ask(backend).text)
        roles = [p["role"] for p in data["people"]]
        outside = [r for r in roles if r not in ("host", "guest")]
        outside += [data["mood"]] if data["mood"] not in ("calm", "tense") else []
        assert len(outside) == 1


@pytest.mark.parametrize("fault", ["truncated", "length"])
def test_cuts_mark_finish_reason_length(fault: str) -> None:
    backend = _chaos([fault])
    for _ in range(10):
        done = _ask(backend)
        assert done.finish_reason == "length"
        assert GOOD.startswith(done.text) and 0 < len(done.text) < len(GOOD)
        if fault == "length":
            assert len(done.text) >= len(GOOD) * 0.9 - 1


def test_empty_slow_and_timeout() -> None:
    assert _ask(_chaos(["empty"])).text == ""
    slow = _chaos(["slow"])
    assert _ask(slow).text == GOOD and slow.injected == {"slow": 1} and slow.sent == 1
    timeout = _chaos(["timeout"])
    kinds = set()
    for _ in range(12):
        with pytest.raises((TimeoutError, LLMBackendError)) as info:
            _ask(timeout)
        if isinstance(info.value, LLMBackendError):
            assert info.value.retryable
        kinds.add(type(info.value))
    assert kinds == {TimeoutError, LLMBackendError}
    assert timeout.injected == {"timeout": 12} and timeout.sent == 0


def test_prose_reply_only_gets_text_faults() -> None:
    inner = ScriptedBackend(["It went fine, thanks."] * 80)
    backend = ChaosBackend(inner, seed=1, rate=1.0, slow_s=0.0, timeout_s=0.0)
    for _ in range(80):
        with contextlib.suppress(TimeoutError, LLMBackendError):
            _ask(backend)
    assert set(backend.injected) <= TEXT_FAULTS
    assert backend.injected.total() == 80
    structural = ChaosBackend(
        ScriptedBackend(["no json here"]),
        seed=1,
        rate=1.0,
        faults=["over_bound", "fence", "wrong_type", "unknown_enum"],
    )
    assert _ask(structural).text == "no json here" and structural.injected.total() == 0


def test_unknown_fault_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown chaos fault"):
        ChaosBackend(ScriptedBackend([]), seed=0, faults=["prose", "gibberish"])
    with pytest.raises(ValueError, match="rate"):
        ChaosBackend(ScriptedBackend([]), seed=0, rate=1.5)
    with pytest.raises(ConfigError, match="gibberish"):
        Config().with_overrides(**{"llm.kind": "chaos", "llm.chaos.faults": ["gibberish"]})


def test_client_recovers_from_repairable_faults() -> None:
    """Prose and fences are repaired by the client's parser: every call succeeds first time."""
    usage = MemoryUsageSink()
    backend = _chaos(["prose", "fence"])
    client = LLMClient(backend, usage=usage, max_retries=0)
    for _ in range(5):
        assert asyncio.run(client.structured(PROMPT, Meeting, stage="chaos")).mood == "calm"
    assert backend.injected.total() == 5
    assert [r.attempts for r in usage.records] == [1] * 5


def test_client_retries_chaos_timeouts_then_gives_up() -> None:
    usage = MemoryUsageSink()
    backend = _chaos(["timeout"])
    client = LLMClient(backend, usage=usage, max_retries=2, backoff=0.0)
    with pytest.raises(LLMBackendError):
        asyncio.run(client.structured(PROMPT, Meeting, stage="chaos"))
    (rec,) = usage.records
    assert not rec.ok and rec.attempts == 3 and rec.backend == "chaos"
    assert backend.injected == {"timeout": 3}


def test_make_backend_builds_chaos() -> None:
    backend = make_backend(
        "chaos", inner="scripted", inner_options={"responses": [GOOD]}, seed=3, rate=0.0
    )
    assert isinstance(backend, ChaosBackend) and backend.model == "scripted"
    assert _ask(backend).text == GOOD
    assert set(FAULTS) >= TEXT_FAULTS
    with pytest.raises(ValueError, match="wrap another chaos"):
        make_backend("chaos", inner="chaos", seed=0)


# --- OpenAICompatibleBackend against the loopback server ---------------------------------


def _client(base_url: str, usage: MemoryUsageSink, **backend: Any) -> LLMClient:
    http = OpenAICompatibleBackend(base_url, "fake-model", timeout=backend.pop("timeout", 5.0))
    return LLMClient(http, usage=usage, max_retries=2, backoff=0.01)


def _structured(client: LLMClient) -> Meeting:
    async def go() -> Meeting:
        try:
            return await client.structured(PROMPT, Meeting, stage="http")
        finally:
            await client.backend.aclose()  # type: ignore[attr-defined]

    return asyncio.run(go())


def _only(usage: MemoryUsageSink) -> LLMCallRecord:
    (rec,) = usage.records
    return rec


@pytest.mark.parametrize(
    ("failures", "attempts"),
    [
        ([Reply(status=429, retry_after=0)], 2),
        ([Reply(status=500), Reply(status=503)], 3),
        ([Reply(drop=True)], 2),
        ([Reply(GOOD, partial=True)], 2),
    ],
    ids=["429-retry-after", "5xx-twice", "dropped", "cut-mid-body"],
)
def test_http_failures_then_success(failures: list[Reply], attempts: int) -> None:
    usage = MemoryUsageSink()
    server = FakeOpenAI([*failures, GOOD])
    with server as url:
        meeting = _structured(_client(url, usage))
    assert meeting.mood == "calm"
    rec = _only(usage)
    assert rec.ok and rec.attempts == attempts and rec.error is None
    assert len(server.requests) == attempts
    assert server.requests[0]["response_format"]["type"] == "json_schema"


def test_persistent_500_fails_and_is_recorded() -> None:
    usage = MemoryUsageSink()
    server = FakeOpenAI(lambda payload: Reply(status=500, content="overloaded"))
    with server as url, pytest.raises(LLMBackendError, match="HTTP 500") as info:
        _structured(_client(url, usage))
    assert info.value.retryable and info.value.status == 500
    rec = _only(usage)
    assert not rec.ok and rec.attempts == 3 and "HTTP 500" in (rec.error or "")
    assert len(server.requests) == 3


def test_dropped_connection_is_a_retryable_backend_error() -> None:
    server = FakeOpenAI([Reply(drop=True), Reply(GOOD, partial=True)])

    async def twice(url: str) -> list[LLMBackendError]:
        errors = []
        async with OpenAICompatibleBackend(url, "fake-model", timeout=5.0) as backend:
            for _ in range(2):
                with pytest.raises(LLMBackendError) as info:
                    await backend.complete(
                        PROMPT, json_schema=SCHEMA, max_tokens=64, temperature=0.0
                    )
                errors.append(info.value)
        return errors

    with server as url:
        errors = asyncio.run(twice(url))
    for error in errors:
        assert error.retryable and error.status is None
        assert "connection lost" in str(error)


def test_reply_slower_than_the_timeout_is_retryable() -> None:
    usage = MemoryUsageSink()
    server = FakeOpenAI([Reply(GOOD, delay_s=30.0), GOOD])
    with server as url:
        meeting = _structured(_client(url, usage, timeout=0.2))
    assert meeting.topics == ["budget"]
    assert _only(usage).attempts == 2


def test_beyond_the_script_is_a_client_error() -> None:
    usage = MemoryUsageSink()
    with FakeOpenAI([]) as url, pytest.raises(LLMBackendError) as info:
        _structured(_client(url, usage))
    assert info.value.status == EXHAUSTED and not info.value.retryable
    assert _only(usage).attempts == 1


def test_retry_after_parsing() -> None:
    assert retry_after(None, 5.0) == 0.0
    assert retry_after("2", 5.0) == 2.0
    assert retry_after("120", 5.0) == 5.0
    assert retry_after("-3", 5.0) == 0.0
    assert retry_after("soon", 5.0) == 0.0
    assert retry_after("nan", 5.0) == 0.0
    past = format_datetime(datetime.now(UTC) - timedelta(minutes=1), usegmt=True)
    future = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    assert retry_after(past, 5.0) == 0.0 and retry_after(future, 5.0) == 5.0


# --- configuration -----------------------------------------------------------------------


def test_config_kind_chaos_wraps_openai() -> None:
    server = FakeOpenAI(lambda payload: GOOD)
    store = open_store(":memory:")
    try:
        with server as url:
            config = Config.load(
                env={
                    "MEMSTRATA_LLM__KIND": "chaos",
                    "MEMSTRATA_LLM__BASE_URL": url,
                    "MEMSTRATA_LLM__MODEL": "fake-model",
                    "MEMSTRATA_LLM__CHAOS__SEED": "5",
                    "MEMSTRATA_LLM__CHAOS__RATE": "1.0",
                    "MEMSTRATA_LLM__CHAOS__FAULTS": "prose, fence",
                }
            )
            assert config.llm.chaos is not None and config.llm.chaos.faults == ["prose", "fence"]
            client = make_llm(config, store)
            assert client is not None
            backend = client.backend
            assert isinstance(backend, ChaosBackend)
            assert isinstance(backend.inner, OpenAICompatibleBackend)
            assert backend.model == "fake-model" and backend.seed == 5

            async def three() -> list[Meeting]:
                try:
                    return [await client.structured(PROMPT, Meeting, stage="cfg") for _ in range(3)]
                finally:
                    await backend.aclose()

            assert [m.mood for m in asyncio.run(three())] == ["calm"] * 3
        assert backend.injected.total() == 3 and backend.sent == 3
        assert len(server.requests) == 3
        assert store.llm_usage()["cfg"]["calls"] == 3
    finally:
        store.close()


def test_config_kind_chaos_defaults_and_errors() -> None:
    config = Config(llm={"kind": "chaos", "base_url": "http://127.0.0.1:9/v1", "model": "m"})  # type: ignore[arg-type]
    store = open_store(":memory:")
    try:
        client = make_llm(config, store)
        assert client is not None and isinstance(client.backend, ChaosBackend)
        assert client.backend.rate == 0.3 and client.backend.faults == FAULTS
        with pytest.raises(ConfigError, match="needs base_url"):
            make_llm(Config(llm={"kind": "chaos"}), store)  # type: ignore[arg-type]
    finally:
        store.close()
