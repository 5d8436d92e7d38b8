"""Value types, accounting records and errors shared by every LLM backend.

Kept free of backend imports so that the rest of the library can type against these
without pulling in httpx or llama.cpp.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from memstrata.errors import MemstrataError
from memstrata.llm.salvage import split

Role = Literal["system", "user", "assistant"]
Outcome = Literal["kept", "repaired", "failed"]


class Message(BaseModel):
    """One chat turn; the only prompt shape backends accept, so prompts stay portable."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class Completion:
    """Raw backend answer plus the token counts needed for cost accounting."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    #: why generation stopped, as the backend says it ("stop", "length"); None if unknown
    finish_reason: str | None = None
    #: of ``completion_tokens``, those a reasoning model spent thinking (when reported)
    reasoning_tokens: int = 0


class LLMCallRecord(BaseModel):
    """One logical client call (all its attempts), so cost and failures are auditable."""

    stage: str
    backend: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    cached: bool
    ok: bool
    error: str | None
    attempts: int
    request_hash: str
    created_at: datetime
    namespace: str | None
    #: "kept" (valid as sent), "repaired" (items cut or dropped, or asked again, with more
    #: room when the token limit cut it) or "failed"
    outcome: Outcome = "kept"
    #: items cut to a bound or dropped, by reason (see :mod:`memstrata.llm.salvage`)
    dropped: dict[str, int] = Field(default_factory=dict)
    #: of ``completion_tokens``, those the server reports as a reasoning model's thought
    reasoning_tokens: int = 0

    @property
    def cut_off(self) -> int:
        """Replies kept although the token limit cut them (after asking with more room)."""
        return self.dropped.get("cut_off", 0)

    @property
    def truncated(self) -> int:
        """Items cut to a bound (a list cut, a string shortened, a reply cut off)."""
        return split(self.dropped)[0]

    @property
    def rejected(self) -> int:
        """Items dropped for breaking the schema."""
        return split(self.dropped)[1]


@runtime_checkable
class UsageSink(Protocol):
    """Where call records go (memory, a database table, a log); must not block for long."""

    def record_llm_call(self, record: LLMCallRecord) -> None: ...


class MemoryUsageSink:
    """Keeps records in a list: for tests, benchmarks and short-lived CLI runs."""

    def __init__(self) -> None:
        self.records: list[LLMCallRecord] = []
        self._lock = threading.Lock()

    def record_llm_call(self, record: LLMCallRecord) -> None:
        with self._lock:
            self.records.append(record)

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per-stage totals: calls, failures, cached, tokens (reasoning apart), latency
        (total and mean ms), outcomes, and items cut, dropped and cut off."""
        out: dict[str, dict[str, Any]] = {}
        with self._lock:
            records = list(self.records)
        for rec in records:
            s = out.setdefault(
                rec.stage,
                {
                    "calls": 0,
                    "failures": 0,
                    "cached": 0,
                    "attempts": 0,
                    "prompt_tokens": 0,
                    "completion_tokens": 0,
                    "latency_ms": 0.0,
                    "kept": 0,
                    "repaired": 0,
                    "truncated": 0,
                    "rejected": 0,
                    "cut_off": 0,
                    "reasoning_tokens": 0,
                },
            )
            s["calls"] += 1
            s["failures"] += 0 if rec.ok else 1
            s["cached"] += 1 if rec.cached else 0
            s["attempts"] += rec.attempts
            s["prompt_tokens"] += rec.prompt_tokens
            s["completion_tokens"] += rec.completion_tokens
            s["latency_ms"] += rec.latency_ms
            s["kept"] += rec.outcome == "kept"
            s["repaired"] += rec.outcome == "repaired"
            s["truncated"] += rec.truncated
            s["rejected"] += rec.rejected
            s["cut_off"] += rec.cut_off
            s["reasoning_tokens"] += rec.reasoning_tokens
        for s in out.values():
            s["mean_latency_ms"] = s["latency_ms"] / s["calls"]
        return out


class LLMError(MemstrataError):
    """Base class, so callers can catch every LLM failure in one place."""


class LLMOutputError(LLMError):
    """The model never produced valid output; ``raw_text`` keeps the last answer for debugging."""

    def __init__(self, message: str, *, raw_text: str | None = None) -> None:
        super().__init__(message)
        self.raw_text = raw_text


class LLMBackendError(LLMError):
    """Transport or server failure; ``retryable`` marks timeouts, 429 and 5xx;
    ``unreachable`` a request that found no server (connection refused or timed out)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        unreachable: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.unreachable = unreachable


#: in the message of every call the breaker refused, so that a builder's failure reason
#: (which quotes it) tells a call never sent from one that failed
NOT_SENT = "not sent: the LLM server could not be reached"


class LLMUnavailableError(LLMBackendError):
    """A call refused without a request: the client's last calls could not reach the
    server (:class:`~memstrata.llm.breaker.Breaker`), so it stops calling for a while."""

    def __init__(self, why: str) -> None:
        super().__init__(f"{NOT_SENT} ({why})", unreachable=True)
        self.why = why
