"""The offline default embedder: real int8 ONNX MiniLM, no network."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from memstrata.embed import Embedder, MiniLMEmbedder
from memstrata.embed.minilm import MAX_TOKENS, load_tokenizer

TEXTS = [
    "The cat sat on the mat.",
    "Quarterly revenue grew by twelve percent.",
    "Je voudrais un café, s'il vous plaît.",
    "東京は日本の首都です。",
    "🎉🎉 party time!!!",
    "x",
]


def test_shape_dtype_and_identity(embedder: MiniLMEmbedder) -> None:
    vecs = embedder.embed(TEXTS)
    assert vecs.shape == (len(TEXTS), 384) and vecs.dtype == np.float32
    assert embedder.dim == 384 and embedder.model_id == "all-MiniLM-L6-v2-int8"
    assert isinstance(embedder, Embedder)
    assert np.isfinite(vecs).all()
    # distinct inputs give distinct vectors
    sims = vecs @ vecs.T
    assert (sims[~np.eye(len(TEXTS), dtype=bool)] < 0.99).all()


def test_unit_norm(embedder: MiniLMEmbedder) -> None:
    norms = np.linalg.norm(embedder.embed(TEXTS), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5)


def test_deterministic_and_independent_of_batch_order(embedder: MiniLMEmbedder) -> None:
    first = embedder.embed(TEXTS)
    assert np.array_equal(first, embedder.embed(TEXTS))
    order = [3, 0, 5, 1, 4, 2]
    shuffled = embedder.embed([TEXTS[i] for i in order])
    assert np.allclose(shuffled, first[order], atol=1e-6)
    # a text alone and inside a batch: same direction (int8 kernels may differ in the last bits)
    alone = embedder.embed([TEXTS[1]])[0]
    assert float(alone @ first[1]) > 0.999


def test_paraphrase_is_closer_than_unrelated(embedder: MiniLMEmbedder) -> None:
    anchor, para, other = embedder.embed(
        [
            "How do I reset my password?",
            "I forgot my login credentials and need to change them.",
            "The recipe calls for two cups of flour.",
        ]
    )
    assert float(anchor @ para) > float(anchor @ other) + 0.2
    assert float(anchor @ para) > 0.4


def test_empty_list(embedder: MiniLMEmbedder) -> None:
    out = embedder.embed([])
    assert out.shape == (0, 384) and out.dtype == np.float32


def test_long_text_is_truncated_not_refused(embedder: MiniLMEmbedder) -> None:
    head = " ".join(f"word{i} alpha beta" for i in range(200))
    assert len(load_tokenizer(10**6).encode(head).ids) > MAX_TOKENS
    a, b, short = embedder.embed(
        [head + " tail one", head + " a completely different tail", "word0 alpha beta"]
    )
    assert np.isclose(np.linalg.norm(a), 1.0, atol=1e-5)
    # only the first 256 word pieces are seen, so the tails make no difference
    assert float(a @ b) > 0.9999
    assert float(a @ short) < 0.999


def test_thread_safe(embedder: MiniLMEmbedder) -> None:
    want = embedder.embed(TEXTS)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(embedder.embed(TEXTS))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and len(results) == 4
    assert all(np.array_equal(r, want) for r in results)


def test_extra_sessions_are_made_on_the_first_request_of_several_batches(
    embedder: MiniLMEmbedder,
) -> None:
    fresh = MiniLMEmbedder(batch_size=2, workers=2)
    query = fresh.embed(TEXTS[:1])
    assert len(fresh._sessions) == 1  # a query needs one
    many = fresh.embed(TEXTS)  # three batches of two, on two sessions
    assert len(fresh._sessions) == 2
    fresh.embed(TEXTS)
    assert len(fresh._sessions) == 2
    assert np.allclose(many, embedder.embed(TEXTS), atol=1e-6)
    assert float(query[0] @ many[0]) > 0.999


class _Recorder:
    """A session that notes the threads it runs on and how many rows each run had."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.runs: list[tuple[int, int]] = []
        self._lock = threading.Lock()

    def run(self, names: Any, feed: dict[str, np.ndarray]) -> Any:
        with self._lock:
            self.runs.append((threading.get_ident(), len(feed["input_ids"])))
        return self.inner.run(names, feed)


def test_a_short_request_runs_its_texts_side_by_side_on_one_session(
    embedder: MiniLMEmbedder,
) -> None:
    want = np.vstack([embedder.embed([t]) for t in TEXTS[:3]])
    fresh = MiniLMEmbedder(workers=2)
    recorder = _Recorder(fresh._sessions[0])
    fresh._free.get()
    fresh._free.put(recorder)
    got = fresh.embed(TEXTS[:3])
    # one session only (no second model loaded), its texts in two runs on two threads
    assert len(fresh._sessions) == 1
    assert sorted(rows for _, rows in recorder.runs) == [1, 2]
    assert len({thread for thread, _ in recorder.runs}) == 2
    # and each text's vector is what it is alone
    assert np.allclose(got, want, atol=1e-6)
    recorder.runs.clear()
    fresh.embed(TEXTS[:1])
    assert recorder.runs == [(threading.get_ident(), 1)]  # one text: the caller's thread


def test_one_core_runs_a_short_request_as_one_batch() -> None:
    fresh = MiniLMEmbedder(workers=1)
    recorder = _Recorder(fresh._sessions[0])
    fresh._free.get()
    fresh._free.put(recorder)
    fresh.embed(TEXTS[:3])
    assert recorder.runs == [(threading.get_ident(), 3)]
