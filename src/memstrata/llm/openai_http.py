"""Backend for any OpenAI-compatible ``/chat/completions`` endpoint.

One wire format covers OpenAI, vLLM, Ollama, llama.cpp server and LM Studio. Structured
output uses ``response_format: json_schema`` (OpenAI style). Servers that only know the
older ``{"type": "json_object", "schema": ...}`` form (llama-cpp-python's server) reject
it with an error naming ``response_format``; in ``auto`` mode the backend then switches to
that form once and for all.
"""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal

import httpx

from memstrata.llm._aio import LoopLocal
from memstrata.llm.tools import (
    Tool,
    ToolRound,
    ToolsUnsupportedError,
    native_text,
    openai_messages,
)
from memstrata.llm.types import Completion, LLMBackendError, Message
from memstrata.redact import MASK, redact

_BODY_EXCERPT = 300

#: how a JSON schema is sent: OpenAI's ``json_schema``, the older ``json_object`` form,
#: ``auto`` (the first, then the second if the server refuses it), or ``none`` (not at
#: all: the prompt alone asks for JSON, as with a server that enforces no schema)
StructuredFormat = Literal["auto", "json_schema", "json_object", "none"]

logger = logging.getLogger("memstrata.llm")


class OpenAICompatibleBackend:
    """Async HTTP client for ``POST {base_url}/chat/completions``."""

    name = "openai"
    #: native function calling (``tools``); turned off when the server refuses it
    supports_tools = True

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
        structured_format: StructuredFormat = "auto",
        retry_after_cap: float = 5.0,
        context_tokens: int | None = None,
        reasoning_effort: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        #: the model's context window, as configured (a server does not say it)
        self.context_tokens = context_tokens
        #: sent as ``reasoning_effort`` with every request when set (none, low, medium,
        #: high); a reasoning model spends that much thought before it replies
        self.reasoning_effort = reasoning_effort
        #: longest wait a 429 or 503's ``Retry-After`` buys before the error is raised
        self.retry_after_cap = retry_after_cap
        self.model = model
        self.timeout = timeout
        self.structured_format = structured_format
        self._format: StructuredFormat = (
            "json_object" if structured_format == "json_object" else "json_schema"
        )
        #: the request's name for the completion limit: ``max_tokens``, until a server
        #: asks for ``max_completion_tokens`` (OpenAI's reasoning models refuse the other)
        self._limit_key = "max_tokens"
        self._api_key = api_key
        self._transport = transport
        # httpx pools are tied to the loop that opened them; one client per loop.
        self._clients = LoopLocal(self._new_client)

    def __repr__(self) -> str:  # never show the key
        return f"OpenAICompatibleBackend(base_url={self.base_url!r}, model={self.model!r})"

    def _new_client(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        return httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=self.timeout,
            transport=self._transport,
        )

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
    ) -> Completion:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in messages],
            self._limit_key: max_tokens,
            "temperature": temperature,
            "stream": False,
            **self._effort(),
        }
        if json_schema is not None and self.structured_format != "none":
            payload["response_format"] = _response_format(json_schema, self._format)
        response = await self._post(payload)
        if (
            json_schema is not None
            and response.status_code in (400, 422, 500)  # llama-cpp-python answers 500
            and self.structured_format == "auto"
            and self._format == "json_schema"
            and "response_format" in response.text
        ):
            logger.info("%s rejects json_schema response_format; using json_object", self)
            self._format = "json_object"
            payload["response_format"] = _response_format(json_schema, self._format)
            response = await self._post(payload)
        data, message = self._message(response)
        return _completion(data, message.get("content") or "", self.model)

    async def complete_tools(
        self,
        messages: list[Message],
        tools: list[Tool],
        rounds: list[ToolRound],
        *,
        allow_tools: bool,
        max_tokens: int,
        temperature: float,
    ) -> Completion:
        """One round with ``tools``; the answer's content and ``tool_calls`` come back as
        the canonical JSON of :func:`memstrata.llm.tools.native_text`."""
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": openai_messages(messages, rounds),
            "tools": [t.openai() for t in tools],
            "tool_choice": "auto" if allow_tools else "none",
            self._limit_key: max_tokens,
            "temperature": temperature,
            "stream": False,
            **self._effort(),
        }
        response = await self._post(payload)
        if response.status_code in (400, 422, 500) and "tool" in response.text.lower():
            self.supports_tools = False
            raise ToolsUnsupportedError(
                self._redact(f"{self.base_url} refuses tools: {response.text[:_BODY_EXCERPT]}"),
                status=response.status_code,
            )
        data, message = self._message(response)
        text = native_text(message.get("content") or "", message.get("tool_calls") or [])
        return _completion(data, text, self.model)

    def _effort(self) -> dict[str, str]:
        return {"reasoning_effort": self.reasoning_effort} if self.reasoning_effort else {}

    def _message(self, response: httpx.Response) -> tuple[dict[str, Any], dict[str, Any]]:
        """The answer's JSON and its first choice's message, or a clear backend error."""
        url = f"{self.base_url}/chat/completions"
        if response.status_code >= 400:
            status = response.status_code
            raise LLMBackendError(
                self._redact(f"HTTP {status} from {url}: {response.text[:_BODY_EXCERPT]}"),
                status=status,
                retryable=status == 429 or status >= 500,
            )
        try:
            data = response.json()
            return data, data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMBackendError(
                self._redact(f"unexpected response from {url}: {response.text[:_BODY_EXCERPT]}"),
                status=response.status_code,
            ) from exc

    async def _post(self, payload: dict[str, Any]) -> httpx.Response:
        """One request, sent again once with ``max_completion_tokens`` in place of
        ``max_tokens`` when the server refuses the latter and names the former (OpenAI's
        reasoning models do); the backend keeps to that name from then on."""
        response = await self._post_once(payload)
        if (
            response.status_code == 400
            and "max_tokens" in payload
            and "max_completion_tokens" in response.text
        ):
            logger.info("%s takes max_completion_tokens, not max_tokens", self)
            self._limit_key = "max_completion_tokens"
            payload = dict(payload)
            payload["max_completion_tokens"] = payload.pop("max_tokens")
            response = await self._post_once(payload)
        return response

    async def _post_once(self, payload: dict[str, Any]) -> httpx.Response:
        """One POST; transport failures (a timeout, a refused or dropped connection) become
        retryable errors. A 429 or 503 that names a ``Retry-After`` is waited out here, up
        to ``retry_after_cap``, because the client's own backoff knows nothing of it."""
        url = f"{self.base_url}/chat/completions"
        try:
            response = await self._clients.get().post("/chat/completions", json=payload)
        except httpx.TimeoutException as exc:
            # a connection never made is a server not there; a slow reply is a server busy
            raise LLMBackendError(
                self._redact(f"timeout calling {url}: {exc!r}"),
                retryable=True,
                unreachable=isinstance(exc, httpx.ConnectTimeout),
            ) from exc
        except httpx.TransportError as exc:
            # ConnectError: nobody answered; anything else (RemoteProtocolError, ReadError):
            # the server dropped the connection before a full reply
            refused = isinstance(exc, httpx.ConnectError)
            what = "cannot reach" if refused else "connection lost to"
            raise LLMBackendError(
                self._redact(f"{what} {url}: {type(exc).__name__}: {exc}"),
                retryable=True,
                unreachable=refused,
            ) from exc
        if response.status_code in (429, 503):
            wait = retry_after(response.headers.get("Retry-After"), self.retry_after_cap)
            if wait > 0:
                logger.info("%s asks to retry after %.1fs", self, wait)
                await asyncio.sleep(wait)
        return response

    def _redact(self, text: str) -> str:
        return redact(text.replace(self._api_key, MASK) if self._api_key else text)

    async def aclose(self) -> None:
        """Close the HTTP pool of the running loop (others die with their loops)."""
        await self._clients.get().aclose()

    async def __aenter__(self) -> OpenAICompatibleBackend:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _response_format(schema: dict[str, Any], style: StructuredFormat) -> dict[str, Any]:
    if style == "json_object":
        return {"type": "json_object", "schema": schema}
    return {
        "type": "json_schema",
        "json_schema": {"name": _schema_name(schema), "schema": schema, "strict": True},
    }


def _schema_name(schema: dict[str, Any]) -> str:
    """OpenAI requires ``^[a-zA-Z0-9_-]{1,64}$``; derive it from the schema title."""
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", str(schema.get("title") or "response"))
    return name[:64] or "response"


def _completion(data: dict[str, Any], text: str, model: str) -> Completion:
    """The reply with its token counts; the reasoning tokens a server reports
    (``usage.completion_tokens_details.reasoning_tokens``, part of the completion
    tokens) are kept apart, so that a reasoning model's thought is seen in the accounts."""
    usage = data.get("usage") or {}
    details = usage.get("completion_tokens_details") or {}
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return Completion(
        text=text,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        model=str(data.get("model") or model),
        finish_reason=_finish_reason(data),
        reasoning_tokens=int(reasoning or 0),
    )


def _finish_reason(data: dict[str, Any]) -> str | None:
    """The first choice's ``finish_reason`` ("length" marks a reply cut at max_tokens)."""
    choices = data.get("choices") or [{}]
    reason = choices[0].get("finish_reason") if isinstance(choices[0], dict) else None
    return str(reason) if reason else None


def retry_after(value: str | None, cap: float) -> float:
    """Seconds a ``Retry-After`` header asks for (delta seconds or an HTTP date), clamped
    to ``[0, cap]``; 0 when absent or unreadable."""
    if not value:
        return 0.0
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return 0.0
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return min(max(seconds, 0.0), cap) if seconds == seconds else 0.0  # NaN -> 0
