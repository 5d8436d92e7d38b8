"""The backend protocol and ``LLMClient``, the single entry point the library calls.

The client owns everything backends should not repeat: bounded schemas, repair and
validation, retries that quote the validation error back to the model, caching, a
concurrency limit, and exactly one accounting record per call.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from memstrata.llm._aio import LoopLocal
from memstrata.llm.breaker import Breaker
from memstrata.llm.budgets import Budgets
from memstrata.llm.cache import ResponseCache, prompt_terms
from memstrata.llm.salvage import Salvage
from memstrata.llm.schema import bounded_json_schema, parse_structured
from memstrata.llm.tools import (
    Tool,
    ToolReply,
    ToolRound,
    ToolsUnsupportedError,
    json_protocol,
    parse_json_reply,
    parse_native_reply,
    render_rounds,
)
from memstrata.llm.tools import json_schema as tool_json_schema
from memstrata.llm.types import (
    Completion,
    LLMBackendError,
    LLMCallRecord,
    LLMError,
    LLMOutputError,
    LLMUnavailableError,
    Message,
    Outcome,
    UsageSink,
)

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")
Complete = Callable[[list[Message], dict[str, Any] | None, int, float], Awaitable[Completion]]

logger = logging.getLogger("memstrata.llm")

_MAX_ERROR_CHARS = 500
_MAX_ECHO_CHARS = 2000


def context_tokens(backend: object) -> int | None:
    """The backend's context window in tokens, when it knows it (a GGUF model does; a
    server behind an HTTP API does not say): a backend states it as ``context_tokens``."""
    value = getattr(backend, "context_tokens", None)
    return value if isinstance(value, int) and value > 0 else None


@runtime_checkable
class LLMBackend(Protocol):
    """A chat model. ``json_schema`` asks for output constrained to that schema."""

    name: str
    model: str

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
    ) -> Completion: ...


def request_hash(
    backend: LLMBackend,
    messages: list[Message],
    json_schema: dict[str, Any] | None,
    max_tokens: int,
    temperature: float,
) -> str:
    """sha256 of the canonical JSON of everything that determines the answer."""
    payload = {
        "backend": backend.name,
        "model": backend.model,
        "messages": [m.model_dump() for m in messages],
        "schema": json_schema,
        "max_tokens": max_tokens,
        "temperature": temperature,
    }
    effort = getattr(backend, "reasoning_effort", None)
    if effort:  # only when sent, so that the keys of earlier replies still match
        payload["reasoning_effort"] = effort
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class _Tally:
    """Mutable per-call accounting, summed over attempts."""

    def __init__(self) -> None:
        self.attempts = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.reasoning_tokens = 0
        self.model: str | None = None
        self.cached = False
        self.salvage = Salvage()
        self.reasked = 0  # replies with nothing usable, asked again
        self.grown = False  # a reply the limit cut, asked again with more room

    def add(self, completion: Completion) -> None:
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        self.reasoning_tokens += completion.reasoning_tokens
        self.model = completion.model or self.model

    def outcome(self, error: BaseException | None) -> Outcome:
        if error is not None:
            return "failed"
        return "repaired" if self.reasked or self.grown or self.salvage.repaired else "kept"

    def usage(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached": self.cached,
        }


class LLMClient:
    """Structured and plain-text calls with retries, caching and accounting.

    ``max_retries`` extra attempts go to retryable backend errors (timeouts, connection
    failures, 429, 5xx), ``backoff`` seconds apart and doubling (waited with ``sleep``).
    After ``breaker_failures`` calls in a row that could not reach the server the client
    stops sending for ``breaker_cooldown_s`` (:mod:`memstrata.llm.breaker`, on ``clock``).
    A reply the token limit stopped is asked again once with twice the room, within the
    model's output limit (``budgets``, :mod:`memstrata.llm.budgets`; and ``max_tokens``);
    one cut again is kept, counted ``cut_off``, never taken for whole.
    A reply that breaks its schema is repaired item by item
    (:mod:`memstrata.llm.salvage`); one with nothing usable is asked again
    ``output_retries`` times (never more than ``max_retries``: a client with no retries
    has none), quoting the problem, and then fails the call. So a call is
    always bounded, and its record says whether the reply was kept as sent, repaired, or
    failed, and what was cut or dropped by reason.
    """

    def __init__(
        self,
        backend: LLMBackend,
        *,
        cache: ResponseCache | None = None,
        usage: UsageSink | None = None,
        max_retries: int = 2,
        namespace: str | None = None,
        concurrency: int = 4,
        backoff: float = 0.5,
        output_retries: int = 1,
        max_tokens: int | None = None,
        budgets: Budgets | None = None,
        breaker_failures: int = 3,
        breaker_cooldown_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if max_retries < 0 or output_retries < 0:
            raise ValueError("max_retries and output_retries must be >= 0")
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self.backend = backend
        self.cache = cache
        self.usage = usage
        self.max_retries = max_retries
        self.namespace = namespace
        self.concurrency = concurrency
        self.backoff = backoff
        self.output_retries = output_retries
        #: a ceiling on every call's completion budget (a slow model, a cost limit)
        self.max_tokens = max_tokens
        #: the model's budgets per stage and its limits; designs ask them for theirs
        self.budgets = budgets or Budgets.for_backend(backend)
        self._semaphore = LoopLocal(lambda: asyncio.Semaphore(concurrency))
        #: shared with the scoped copies: one server, one count of calls that missed it
        self.breaker = Breaker(breaker_failures, breaker_cooldown_s, clock)
        self._sleep = sleep

    def scoped(self, *, namespace: str | None = None, usage: UsageSink | None = None) -> LLMClient:
        """A client for one namespace (and optionally one more usage sink) that shares this
        one's backend, cache and concurrency limit; records still go to this one's sink."""
        other = copy.copy(self)
        other.namespace = namespace
        if usage is not None:
            other.usage = _Tee(self.usage, usage)
        return other

    async def structured(
        self,
        messages: list[Message],
        response_model: type[T],
        *,
        stage: str,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        repairs: Salvage | None = None,
        fallback: Callable[[str, Salvage], T] | None = None,
    ) -> T:
        """Ask for JSON matching ``response_model`` and return the validated instance.

        ``repairs``, when given, receives what was cut or dropped from the reply used, for
        a design that counts rejected items itself. ``fallback`` reads a reply the schema
        could not, the design's own way, counting what it drops in the ``Salvage`` it is
        given (and raising ``LLMOutputError`` if it cannot either): a model that answers
        "nothing to replace" in words has answered."""
        schema = bounded_json_schema(
            response_model, max_items=self.budgets.bound("schema.array_items")
        )
        tally = _Tally()

        def parse(text: str) -> T:
            tally.salvage = Salvage()  # only the reply that is used counts
            try:
                return parse_structured(text, response_model, tally.salvage)
            except LLMOutputError as exc:
                if fallback is None:
                    raise
                try:
                    return fallback(text, tally.salvage)
                except LLMOutputError:  # the schema's reason is the one to quote back
                    raise exc from None

        value = await self._call(
            messages, schema, parse, stage, max_tokens, temperature, tally=tally
        )
        if repairs is not None:
            repairs.merge(tally.salvage)
        return value

    async def text(
        self,
        messages: list[Message],
        *,
        stage: str,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> str:
        """Plain completion text, with the same retries, caching and accounting."""
        return await self._call(messages, None, lambda t: t, stage, max_tokens, temperature)

    async def read(
        self,
        messages: list[Message],
        parse: Callable[[str], R],
        *,
        stage: str,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> R:
        """A plain-text reply read by ``parse`` (a design's own line format). A reply it
        cannot read (``LLMOutputError``) is asked again once and counted like a
        structured one."""
        return await self._call(messages, None, parse, stage, max_tokens, temperature)

    async def tool_step(
        self,
        messages: list[Message],
        tools: list[Tool],
        rounds: list[ToolRound],
        *,
        stage: str,
        final_schema: dict[str, Any] | None = None,
        allow_tools: bool = True,
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> ToolReply:
        """One round of a tool conversation (see :mod:`memstrata.llm.tools`): natively
        when the backend supports tools, else through the JSON protocol. With
        ``allow_tools=False`` the model must give its final answer."""
        tally = _Tally()
        if getattr(self.backend, "supports_tools", False):
            wire = {"tools": [t.model_dump() for t in tools], "allow": allow_tools}
            wire["rounds"] = [r.model_dump() for r in rounds]

            async def native(
                msgs: list[Message], _s: dict[str, Any] | None, mt: int, temp: float
            ) -> Completion:
                return await self.backend.complete_tools(  # type: ignore[attr-defined]
                    msgs, tools, rounds, allow_tools=allow_tools, max_tokens=mt, temperature=temp
                )

            try:
                reply = await self._call(
                    messages,
                    wire,
                    parse_native_reply,
                    stage,
                    max_tokens,
                    temperature,
                    complete=native,
                    tally=tally,
                )
                return reply.model_copy(update=tally.usage())
            except ToolsUnsupportedError:
                logger.info("%s refuses tools; using the JSON tool protocol", self.backend.name)
        protocol = Message(role="system", content=json_protocol(tools, final_schema))
        convo = [protocol, *messages, *render_rounds(rounds)]
        if not allow_tools:
            convo.append(
                Message(role="user", content="No more tool calls: give the final answer now.")
            )
        schema = tool_json_schema(tools, final_schema, allow_tools)
        reply = await self._call(
            convo,
            schema,
            lambda text: parse_json_reply(text, tools, allow_tools),
            stage,
            max_tokens,
            temperature,
            tally=tally,
        )
        return reply.model_copy(update=tally.usage())

    async def _call(
        self,
        messages: list[Message],
        schema: dict[str, Any] | None,
        parse: Callable[[str], R],
        stage: str,
        max_tokens: int,
        temperature: float,
        *,
        complete: Complete | None = None,
        tally: _Tally | None = None,
    ) -> R:
        started = time.perf_counter()
        if self.max_tokens is not None:
            max_tokens = min(max_tokens, self.max_tokens)
        key = request_hash(self.backend, messages, schema, max_tokens, temperature)
        tally = tally or _Tally()
        cached = sent = False
        error: BaseException | None = None
        try:
            if self.cache is not None:
                hit = await self._cache_io(self.cache.get, key)
                if hit is not None:
                    try:
                        value = parse(hit)
                    except LLMOutputError:
                        logger.warning("ignoring cached response that no longer validates")
                    else:
                        cached = sent = tally.cached = True
                        return value
            why = self.breaker.refusal()
            if why is not None:  # not sent, so not accounted: no request, no cost
                raise LLMUnavailableError(f"{self.backend.name}: {why}")
            sent = True
            text, value = await self._attempts(
                messages, schema, parse, max_tokens, temperature, tally, complete
            )
            if self.cache is not None:
                # a native tool conversation carries its tool results in the wire
                said = [m.content for m in messages]
                if schema is not None and "rounds" in schema and "tools" in schema:
                    said.append(json.dumps(schema["rounds"], ensure_ascii=False))
                terms = prompt_terms(said)
                await self._cache_io(self.cache.put, key, text, terms)
            return value
        except BaseException as exc:
            error = exc
            if isinstance(exc, LLMUnavailableError):
                logger.info("LLM call not sent: stage=%s: %s", stage, exc)
            elif isinstance(exc, LLMError):
                logger.warning(
                    "LLM call failed: stage=%s backend=%s attempts=%d: %s",
                    stage,
                    self.backend.name,
                    tally.attempts,
                    exc,
                )
            raise
        finally:
            if sent:
                self._record(stage, key, tally, started, cached, error)

    async def _cache_io(self, fn: Callable[..., R], *args: Any) -> R | None:
        """Run a cache operation off the loop; a broken cache degrades to no cache."""
        try:
            return await asyncio.to_thread(fn, *args)
        except Exception:
            logger.warning(
                "response cache %s failed; continuing without it", fn.__name__, exc_info=True
            )
            return None

    async def _attempts(
        self,
        messages: list[Message],
        schema: dict[str, Any] | None,
        parse: Callable[[str], R],
        max_tokens: int,
        temperature: float,
        tally: _Tally,
        complete: Complete | None = None,
    ) -> tuple[str, R]:
        conversation = list(messages)
        last_error: LLMError | None = None
        backend_errors = 0
        room = max_tokens
        while True:
            if isinstance(last_error, LLMBackendError):
                await self._sleep(min(self.backoff * 2 ** (backend_errors - 1), 8.0))
                if self.breaker.is_open:  # other calls found the server gone meanwhile
                    if last_error.unreachable:
                        self.breaker.unreached(last_error)
                    raise last_error
            tally.attempts += 1
            try:
                completion = await self._complete(conversation, schema, room, temperature, complete)
            except LLMBackendError as exc:
                last_error = exc
                backend_errors += 1
                if not exc.unreachable:
                    self.breaker.reached()
                if not exc.retryable or backend_errors > self.max_retries:
                    if exc.unreachable:
                        self.breaker.unreached(exc)
                    raise
                logger.info("attempt %d: backend error: %s", tally.attempts, exc)
                continue
            self.breaker.reached()
            tally.add(completion)
            cut = completion.finish_reason == "length"
            more = self._more_room(room, completion) if cut and not tally.grown else room
            if more > room:  # not the whole reply: the same question with more room
                logger.info(
                    "attempt %d: cut off at %d tokens; asking with %d", tally.attempts, room, more
                )
                room, tally.grown = more, True
                continue
            try:
                value = parse(completion.text)
            except LLMOutputError as exc:
                last_error = exc
                logger.info("attempt %d: invalid output: %s", tally.attempts, exc)
                if tally.reasked >= min(self.output_retries, self.max_retries):
                    break
                tally.reasked += 1
                problem = "it was cut off at the length limit" if cut else str(exc)
                shorter = " Keep it shorter." if cut else ""
                conversation = [
                    *messages,
                    Message(role="assistant", content=completion.text[:_MAX_ECHO_CHARS]),
                    Message(
                        role="user",
                        content=(
                            f"That reply was invalid: {problem}\n"
                            "Reply again with only the corrected JSON, matching the schema."
                            + shorter
                        ),
                    ),
                ]
                continue
            if cut and not tally.salvage.reasons["cut_off"]:
                tally.salvage.reasons["cut_off"] += 1  # cut at the limit: kept, and said so
            return completion.text, value
        assert isinstance(last_error, LLMOutputError)
        raise LLMOutputError(
            f"invalid output after {tally.attempts} attempts: {last_error}",
            raw_text=last_error.raw_text,
        ) from last_error

    def _more_room(self, room: int, completion: Completion) -> int:
        """Twice ``room``, within the model's output limit, the client's ceiling and what
        the context leaves beside the prompt (``room`` when none is left). Once, and
        twice the room: a model that rambles to any budget (the bundled 135M one does)
        costs at most three times its budget, and the prompt is sent at most twice."""
        limit = self.budgets.max_output_tokens
        if self.max_tokens is not None:
            limit = min(limit, self.max_tokens)
        if completion.prompt_tokens:
            limit = min(limit, self.budgets.context_tokens - completion.prompt_tokens)
        return max(room, min(2 * room, limit))

    async def _complete(
        self,
        messages: list[Message],
        schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
        complete: Complete | None = None,
    ) -> Completion:
        """One backend request; unknown exceptions become ``LLMBackendError``."""
        async with self._semaphore.get():
            try:
                if complete is not None:
                    return await complete(messages, schema, max_tokens, temperature)
                return await self.backend.complete(
                    messages, json_schema=schema, max_tokens=max_tokens, temperature=temperature
                )
            except LLMBackendError:
                raise
            except (TimeoutError, ConnectionError) as exc:
                raise LLMBackendError(
                    f"{self.backend.name}: {type(exc).__name__}: {exc}",
                    retryable=True,
                    unreachable=isinstance(exc, ConnectionRefusedError),
                ) from exc
            except Exception as exc:
                raise LLMBackendError(f"{self.backend.name}: {type(exc).__name__}: {exc}") from exc

    def _record(
        self,
        stage: str,
        key: str,
        tally: _Tally,
        started: float,
        cached: bool,
        error: BaseException | None,
    ) -> None:
        if self.usage is None:
            return
        message = None
        if error is not None:
            message = f"{type(error).__name__}: {error}"[:_MAX_ERROR_CHARS]
        self.usage.record_llm_call(
            LLMCallRecord(
                stage=stage,
                backend=self.backend.name,
                model=tally.model or self.backend.model,
                prompt_tokens=tally.prompt_tokens,
                completion_tokens=tally.completion_tokens,
                latency_ms=(time.perf_counter() - started) * 1000.0,
                cached=cached,
                ok=error is None,
                error=message,
                attempts=tally.attempts,
                request_hash=key,
                created_at=datetime.now(UTC),
                namespace=self.namespace,
                outcome=tally.outcome(error),
                dropped=dict(tally.salvage.reasons),
                reasoning_tokens=tally.reasoning_tokens,
            )
        )


class _Tee:
    """Sends each call record to two sinks (the store, and a per-request tally)."""

    def __init__(self, first: UsageSink | None, second: UsageSink) -> None:
        self.first = first
        self.second = second

    def record_llm_call(self, record: LLMCallRecord) -> None:
        if self.first is not None:
            self.first.record_llm_call(record)
        self.second.record_llm_call(record)
