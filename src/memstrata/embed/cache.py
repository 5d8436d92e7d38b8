"""Embedding through the store's cache: each distinct text is embedded once per model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memstrata.embed.base import Embedder, Vectors, content_hash
from memstrata.store.base import Store


def ensure_embedded(store: Store, embedder: Embedder, texts: Sequence[str]) -> list[bytes]:
    """Store a vector for every text this model has never seen; returns each text's hash
    (the key episodes and records point to)."""
    hashes = [content_hash(t) for t in texts]
    if not hashes:
        return hashes
    known = store.cached_embeddings(embedder.model_id, hashes)
    todo: dict[bytes, str] = {}
    for h, t in zip(hashes, texts, strict=True):
        if h not in known:
            todo.setdefault(h, t)
    if todo:
        fresh = embedder.embed(list(todo.values()))
        store.put_embeddings(embedder.model_id, list(zip(todo, fresh, strict=True)))
    return hashes


def embed_cached(store: Store, embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """Vectors for ``texts`` in order; only texts never seen by this model are embedded.

    Every vector is read back from the store, so fresh and cached ones share its float16
    precision."""
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    hashes = ensure_embedded(store, embedder, texts)
    known = store.cached_embeddings(embedder.model_id, list(dict.fromkeys(hashes)))
    return np.stack([known[h] for h in hashes]).astype(np.float32)
