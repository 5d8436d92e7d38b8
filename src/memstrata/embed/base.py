"""The embedder interface: texts in, L2-normalised float32 vectors out."""

from __future__ import annotations

import hashlib
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

Vectors = NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors. ``model_id`` keys the embedding cache, so two
    embedders that give different vectors must never share one."""

    model_id: str
    dim: int

    def embed(self, texts: list[str]) -> Vectors:
        """Return an array of shape ``(len(texts), dim)``, each row of unit length."""
        ...


def content_hash(text: str) -> bytes:
    """Key of the embedding cache: 16 bytes of sha256 of the exact input text."""
    return hashlib.sha256(text.encode("utf-8")).digest()[:16]


def normalise(vectors: NDArray[np.floating]) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32)
