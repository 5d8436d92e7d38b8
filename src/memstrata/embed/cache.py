"""Embedding through the store's cache: each distinct text is embedded once per model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memstrata.embed.base import Embedder, Vectors, content_hash
from memstrata.store.base import Store


def embed_cached(store: Store, embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """Vectors for ``texts`` in order; only texts never seen by this model are embedded."""
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    hashes = [content_hash(t) for t in texts]
    model = embedder.model_id
    known = store.cached_embeddings(model, hashes)
    todo: dict[bytes, str] = {}
    for h, t in zip(hashes, texts, strict=True):
        if h not in known:
            todo.setdefault(h, t)
    if todo:
        fresh = embedder.embed(list(todo.values()))
        pairs = list(zip(todo, fresh, strict=True))
        store.put_embeddings(model, pairs)
        # The store keeps float16; use the stored precision so cached and fresh agree.
        for h, v in pairs:
            known[h] = v.astype(np.float16).astype(np.float32)
    return np.stack([known[h] for h in hashes]).astype(np.float32)
