"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, Ollama,
llama.cpp server, LM Studio, TEI)."""

from __future__ import annotations

import httpx
import numpy as np

from memstrata.embed.base import Vectors, normalise
from memstrata.errors import MemstrataError


class EmbeddingBackendError(MemstrataError):
    """The embeddings endpoint failed or answered something unusable."""


class OpenAIEmbedder:
    """Synchronous client; vectors are re-normalised so cosine equals dot product."""

    def __init__(
        self,
        base_url: str,
        model: str,
        dim: int,
        api_key: str | None = None,
        timeout: float = 60.0,
        batch_size: int = 128,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.model_id = f"openai:{model}"
        self.dim = dim
        self._model = model
        self._batch_size = batch_size
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start : start + self._batch_size]
            try:
                resp = self._client.post("/embeddings", json={"model": self._model, "input": batch})
            except httpx.HTTPError as exc:
                raise EmbeddingBackendError(f"embeddings request failed: {exc}") from exc
            if resp.status_code != 200:
                raise EmbeddingBackendError(
                    f"embeddings endpoint answered HTTP {resp.status_code}: {resp.text[:200]}"
                )
            try:
                data = sorted(resp.json()["data"], key=lambda d: d["index"])
                rows.extend(d["embedding"] for d in data)
            except (KeyError, TypeError, ValueError) as exc:
                raise EmbeddingBackendError(f"unexpected embeddings response: {exc}") from exc
            if len(data) != len(batch):
                raise EmbeddingBackendError(
                    f"endpoint returned {len(data)} vectors for {len(batch)} inputs"
                )
        try:
            arr = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        except ValueError as exc:
            raise EmbeddingBackendError(f"vectors of different lengths: {exc}") from exc
        if len(texts) and arr.shape[1] != self.dim:
            raise EmbeddingBackendError(
                f"endpoint returned {arr.shape[1]}-dimensional vectors, "
                f"configured dim is {self.dim}"
            )
        return normalise(arr)

    def close(self) -> None:
        self._client.close()
