"""Embedding through the store's cache: each distinct text is embedded once per model.

A vector made for a design (a name, a fact, a summary, a sentence a route compares) is
*filed*: under the namespace whose work made it (:func:`made_for`, set by the engine
around a namespace's builds, repairs, searches and answers; none outside them) and the
content words of its text. A delete then finds the vectors made from the words it
removed (``Store.forget_embeddings``, docs/engine.md "Deleted means gone"); an episode's
own vector is found by its hash instead and is not filed.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar

import numpy as np

from memstrata.embed.base import Embedder, Vectors, content_hash
from memstrata.retrieval.text import word_keys
from memstrata.store.base import Store

_FOR: ContextVar[str | None] = ContextVar("memstrata_vectors_made_for", default=None)
P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def made_for(namespace: str) -> Iterator[None]:
    """Vectors embedded meanwhile (in this task, and the threads and tasks it starts) are
    filed under ``namespace``."""
    token = _FOR.set(namespace)
    try:
        yield
    finally:
        _FOR.reset(token)


def for_its_namespace(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Run a coroutine function that takes a ``namespace`` argument :func:`made_for` it."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        namespace: Any = signature.bind(*args, **kwargs).arguments["namespace"]
        with made_for(namespace):
            return await fn(*args, **kwargs)

    return run


def ensure_embedded(
    store: Store, embedder: Embedder, texts: Sequence[str], *, file: bool = True
) -> list[bytes]:
    """Store a vector for every text this model has never seen; returns each text's hash
    (the key episodes and records point to). New vectors are filed (see the module)
    unless ``file`` is false: an episode's own, which its row points to. A text without
    a content word is filed under the word key 0."""
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
        words = {h: word_keys([t]) or {0} for h, t in todo.items()} if file else None
        store.put_embeddings(
            embedder.model_id, list(zip(todo, fresh, strict=True)), words, _FOR.get()
        )
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
