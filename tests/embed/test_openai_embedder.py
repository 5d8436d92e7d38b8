"""OpenAIEmbedder against a real HTTP server on 127.0.0.1 (http.server in a thread)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstrata.embed import EmbeddingBackendError, OpenAIEmbedder
from memstrata.errors import ConfigError
from memstrata.memory import Memory

DIM = 4


def raw_vector(text: str, dim: int = DIM) -> list[float]:
    """Deterministic, deliberately unnormalised vector for a text."""
    return [float(len(text)), float(sum(map(ord, text)) % 97) + 1.0, 3.0, -2.0][:dim] + [0.5] * max(
        0, dim - 4
    )


class Handler(BaseHTTPRequestHandler):
    """The model name chooses the behaviour: ok, fail, wrongdim, short, garbage."""

    requests: list[dict[str, Any]] = []

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Handler.requests.append(
            {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
        )
        if self.path != "/v1/embeddings":
            return self._send(404, {"error": "not found"})
        model, inputs = body["model"], body["input"]
        if model == "fail":
            return self._send(500, {"error": {"message": "the GPU caught fire"}})
        if model == "garbage":
            return self._send(200, {"object": "list", "items": []})
        dim = 3 if model == "wrongdim" else DIM
        if model == "short":  # one vector of twice the size instead of two
            inputs, dim = inputs[:1], DIM * 2
        data = [
            {"object": "embedding", "index": i, "embedding": raw_vector(t, dim)}
            for i, t in enumerate(inputs)
        ]
        self._send(200, {"object": "list", "model": model, "data": list(reversed(data))})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@pytest.fixture(autouse=True)
def _clear_requests() -> None:
    Handler.requests.clear()


def expected(texts: list[str]) -> np.ndarray:
    raw = np.array([raw_vector(t) for t in texts], dtype=np.float64)
    return (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)


def test_returns_normalised_vectors_in_input_order(server_url: str) -> None:
    texts = ["alpha", "a much longer second text", "c", "delta delta"]
    emb = OpenAIEmbedder(server_url + "/", "ok", DIM, api_key="sk-test", batch_size=3)
    try:
        vecs = emb.embed(texts)
    finally:
        emb.close()
    assert vecs.shape == (4, DIM) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    assert np.allclose(vecs, expected(texts), atol=1e-6)  # reversed answers were re-ordered
    assert emb.model_id == "openai:ok" and emb.dim == DIM
    assert [r["body"]["input"] for r in Handler.requests] == [texts[:3], texts[3:]]
    assert all(r["path"] == "/v1/embeddings" for r in Handler.requests)
    assert all(r["body"]["model"] == "ok" for r in Handler.requests)
    assert all(r["auth"] == "Bearer sk-test" for r in Handler.requests)


def test_no_api_key_sends_no_authorization(server_url: str) -> None:
    emb = OpenAIEmbedder(server_url, "ok", DIM)
    emb.embed(["x"])
    emb.close()
    assert Handler.requests[0]["auth"] is None


def test_http_500_raises(server_url: str) -> None:
    emb = OpenAIEmbedder(server_url, "fail", DIM)
    with pytest.raises(EmbeddingBackendError, match=r"HTTP 500.*GPU caught fire"):
        emb.embed(["boom"])
    emb.close()


def test_wrong_dimension_raises(server_url: str) -> None:
    emb = OpenAIEmbedder(server_url, "wrongdim", DIM)
    with pytest.raises(EmbeddingBackendError, match=r"3-dimensional vectors, configured dim is 4"):
        emb.embed(["a", "b"])
    emb.close()


def test_malformed_answer_raises(server_url: str) -> None:
    emb = OpenAIEmbedder(server_url, "garbage", DIM)
    with pytest.raises(EmbeddingBackendError, match="unexpected embeddings response"):
        emb.embed(["a"])
    emb.close()


def test_unreachable_server_raises() -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    emb = OpenAIEmbedder(f"http://127.0.0.1:{port}/v1", "ok", DIM, timeout=5)
    with pytest.raises(EmbeddingBackendError, match="embeddings request failed"):
        emb.embed(["a"])
    emb.close()


def test_empty_list_gives_empty_array(server_url: str) -> None:
    emb = OpenAIEmbedder(server_url, "ok", DIM)
    out = emb.embed([])
    emb.close()
    assert out.shape == (0, DIM) and Handler.requests == []


def test_fewer_vectors_than_inputs_raises(server_url: str) -> None:
    emb = OpenAIEmbedder(server_url, "short", DIM)
    with pytest.raises(EmbeddingBackendError):
        emb.embed(["first", "second"])
    emb.close()


def test_memory_built_from_config_uses_the_endpoint(server_url: str, tmp_path: Path) -> None:
    with Memory.open(
        tmp_path / "m.db",
        **{
            "embedder.kind": "openai",
            "embedder.base_url": server_url,
            "embedder.model": "ok",
            "embedder.dim": DIM,
            "embedder.api_key": "sk-cfg",
        },
    ) as m:
        m.add_many(["alpha", "beta gamma"])
        assert m.stats()["embedder"] == "openai:ok"
        assert m.stats()["namespaces"][0]["embedded"] == 2
        assert m.search("gamma").hits[0].text == "beta gamma"
    assert Handler.requests and all(r["auth"] == "Bearer sk-cfg" for r in Handler.requests)
    with pytest.raises(ConfigError, match="needs base_url, model and dim"):
        Memory.open(tmp_path / "n.db", **{"embedder.kind": "openai", "embedder.model": "ok"})
