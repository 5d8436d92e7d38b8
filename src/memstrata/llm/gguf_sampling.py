"""Greedy decoding under a JSON grammar that tests the grammar on a few tokens first.

llama-cpp-python applies a grammar by testing every token of the vocabulary at every
step (49,152 for SmolLM2) and then takes the best that passes. Under greedy decoding
only the best passing token matters, and it is the model's own best token whenever that
one passes. So :class:`LazyGrammarGreedy` tests that single token; when the grammar
refuses it, the model's 256 best; and the whole vocabulary only when none of those
passes. The tokens chosen are exactly those of the full pass (the best among the tokens
the grammar allows, in both cases); only the work differs. With the bundled model the
best token passes at most steps of a JSON reply (``memstrata bench gguf`` counts them).

Only greedy decoding (temperature 0) with no penalties and no logits processor takes
this path: a sampler that draws at random, or reweights tokens first, needs every
allowed token's probability, which only the full pass gives.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

import numpy as np

#: how many of the model's best tokens are tried before the whole vocabulary
SHORTLIST = 256
#: one llama_token_data: (id int32, logit float32, p float32), as llama.h lays it out
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class LazyGrammarGreedy:
    """A sampler for ``llama_cpp.Llama``'s generation loop (``sample`` picks and accepts a
    token; ``close`` frees it). ``steps`` counts the tokens chosen, ``refused`` the steps
    where the grammar refused the model's best token, ``full_passes`` those of them that
    tested the whole vocabulary."""

    def __init__(self, vocab: Any, grammar: str, root: str, n_vocab: int) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self._grammar = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar.encode("utf-8"), root.encode("utf-8")
        )
        if not self._grammar:
            raise ValueError("llama.cpp could not compile the grammar")
        self._n_vocab = n_vocab
        self._all = np.zeros(n_vocab, dtype=_TOKEN_DATA)
        self._all["id"] = np.arange(n_vocab, dtype=np.int32)
        self._one = np.zeros(1, dtype=_TOKEN_DATA)
        self.steps = 0
        self.refused = 0
        self.full_passes = 0

    def _apply(self, data: np.ndarray[Any, Any]) -> None:
        """Run the grammar over ``data`` in place: tokens it forbids get a logit of -inf."""
        lib = self._lib
        array = lib.llama_token_data_array(
            data=data.ctypes.data_as(ctypes.POINTER(lib.llama_token_data)),
            size=len(data),
            selected=-1,
            sorted=False,
        )
        lib.llama_sampler_apply(self._grammar, ctypes.byref(array))

    def sample(self, ctx: Any, idx: int = -1) -> int:
        """The best token at ``idx`` of ``ctx`` (a ``LlamaContext``) that the grammar
        allows; the grammar then moves past it."""
        lib = self._lib
        pointer = lib.llama_get_logits_ith(ctx.ctx, idx)
        logits = np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))
        self.steps += 1
        token = int(np.argmax(logits))
        self._one[0] = (token, logits[token], 0.0)
        self._apply(self._one)
        if not np.isfinite(self._one["logit"][0]):
            self.refused += 1
            token = self._best_allowed(logits)
        lib.llama_sampler_accept(self._grammar, token)
        return token

    def _best_allowed(self, logits: np.ndarray[Any, Any]) -> int:
        """The best token the grammar allows, when the model's best is not: among the
        ``SHORTLIST`` best tokens first, over the whole vocabulary only if none of them
        passes (or if the best that passes ties with tokens left outside the list)."""
        top = np.argpartition(-logits, SHORTLIST)[:SHORTLIST]
        short = np.zeros(SHORTLIST, dtype=_TOKEN_DATA)
        short["id"], short["logit"] = top, logits[top]
        floor = short["logit"].min()
        self._apply(short)
        allowed = np.isfinite(short["logit"])
        if allowed.any():
            best = short["logit"][allowed].max()
            if best > floor:
                return int(short["id"][allowed & (short["logit"] == best)].min())
        self.full_passes += 1
        self._all["logit"] = logits
        self._apply(self._all)
        token = int(np.argmax(self._all["logit"]))
        if not np.isfinite(self._all["logit"][token]):
            raise RuntimeError("the grammar allows no token here")
        return token

    def close(self) -> None:
        if self._grammar:
            self._lib.llama_sampler_free(self._grammar)
            self._grammar = None

    def __del__(self) -> None:
        self.close()


@functools.cache
def llama_class() -> type:
    """``llama_cpp.Llama`` whose greedy, grammar-constrained generations use
    :class:`LazyGrammarGreedy`; every other generation is llama-cpp-python's own.
    ``last_sampler`` is the last lazy sampler made, for callers that count its work."""
    from llama_cpp import Llama

    class LazyGrammarLlama(Llama):
        last_sampler: LazyGrammarGreedy | None = None

        def _init_sampler(self, **kwargs: Any) -> Any:  # type: ignore[override]
            grammar = kwargs.get("grammar")
            plain = (
                kwargs.get("temp") == 0.0
                and kwargs.get("logits_processor") is None
                and kwargs.get("repeat_penalty", 1.0) == 1.0
                and kwargs.get("frequency_penalty", 0.0) == 0.0
                and kwargs.get("presence_penalty", 0.0) == 0.0
                and (kwargs.get("mirostat_mode") or 0) == 0
            )
            if grammar is None or not plain:
                return super()._init_sampler(**kwargs)
            sampler = LazyGrammarGreedy(
                self._model.vocab, grammar._grammar, grammar._root, self.n_vocab()
            )
            self.last_sampler = sampler
            return sampler

    return LazyGrammarLlama
