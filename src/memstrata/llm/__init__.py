"""LLM access for memstrata: one async client over pluggable backends.

Everything else in the library talks to :class:`LLMClient`; backends only turn messages
into text. Backends are imported when first used: llama.cpp is heavy, and the HTTP one
brings httpx, which a store without an LLM never needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memstrata.llm.base import LLMBackend, LLMClient, request_hash
from memstrata.llm.budgets import Budgets
from memstrata.llm.cache import ResponseCache
from memstrata.llm.chaos import FAULTS, ChaosBackend
from memstrata.llm.gguf import GGUFBackend, find_smollm2_gguf
from memstrata.llm.schema import bounded_json_schema, parse_structured, repair_json
from memstrata.llm.scripted import ScriptedBackend, ScriptExhaustedError
from memstrata.llm.tools import (
    Tool,
    ToolCall,
    ToolLoopResult,
    ToolReply,
    ToolRound,
    run_tool_loop,
)
from memstrata.llm.types import (
    Completion,
    LLMBackendError,
    LLMCallRecord,
    LLMError,
    LLMOutputError,
    LLMUnavailableError,
    MemoryUsageSink,
    Message,
    UsageSink,
)

if TYPE_CHECKING:
    from memstrata.llm.openai_http import OpenAICompatibleBackend

BACKEND_KINDS = ("openai", "gguf", "scripted", "chaos")


def __getattr__(name: str) -> Any:
    if name == "OpenAICompatibleBackend":
        from memstrata.llm.openai_http import OpenAICompatibleBackend

        return OpenAICompatibleBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_backend(kind: str, **options: Any) -> LLMBackend:
    """Build a backend from config: ``openai`` (base_url, model, api_key, timeout),
    ``gguf`` (model_path, n_ctx, n_threads, seed), ``scripted`` (responses) or ``chaos``
    (inner: a backend, or a kind built with ``inner_options``; seed, rate, faults,
    slow_s, timeout_s)."""
    if kind == "chaos":
        inner = options.pop("inner")
        inner_options = options.pop("inner_options", None) or {}
        if isinstance(inner, str):
            if inner == "chaos":
                raise ValueError("a chaos backend cannot wrap another chaos backend")
            inner = make_backend(inner, **inner_options)
        return ChaosBackend(inner, **options)
    if kind == "openai":
        from memstrata.llm.openai_http import OpenAICompatibleBackend

        return OpenAICompatibleBackend(**options)
    if kind == "gguf":
        return GGUFBackend(**options)
    if kind == "scripted":
        return ScriptedBackend(**options)
    raise ValueError(f"unknown LLM backend kind {kind!r}; expected one of {BACKEND_KINDS}")


__all__ = [
    "BACKEND_KINDS",
    "Budgets",
    "FAULTS",
    "ChaosBackend",
    "Completion",
    "GGUFBackend",
    "LLMBackend",
    "LLMBackendError",
    "LLMCallRecord",
    "LLMClient",
    "LLMError",
    "LLMOutputError",
    "LLMUnavailableError",
    "MemoryUsageSink",
    "Message",
    "OpenAICompatibleBackend",
    "ResponseCache",
    "ScriptExhaustedError",
    "ScriptedBackend",
    "Tool",
    "ToolCall",
    "ToolLoopResult",
    "ToolReply",
    "ToolRound",
    "UsageSink",
    "bounded_json_schema",
    "find_smollm2_gguf",
    "make_backend",
    "parse_structured",
    "repair_json",
    "request_hash",
    "run_tool_loop",
]
