"""An embedder that loads its model on the first ``embed``.

Opening a store needs the embedder's name and width (``model_id``, ``dim``: they key the
vector cache) but not its model. Loading the default ONNX model takes about a second and
a few hundred MB, which commands that never embed (``stats``, ``delete``, ``history``)
would pay for nothing; this wrapper defers it to the first text that needs a vector.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from memstrata.embed.base import Embedder, Vectors
from memstrata.errors import ConfigError


class LazyEmbedder:
    """Satisfies :class:`Embedder` with ``model_id`` and ``dim`` known up front; ``load``
    builds the real embedder once, on the first call to :meth:`embed` (thread-safe)."""

    def __init__(self, model_id: str, dim: int, load: Callable[[], Embedder]) -> None:
        self.model_id = model_id
        self.dim = dim
        self._load = load
        self._inner: Embedder | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    def inner(self) -> Embedder:
        """The real embedder, loaded now if it was not yet."""
        if self._inner is None:
            with self._lock:
                if self._inner is None:
                    inner = self._load()
                    if (inner.model_id, inner.dim) != (self.model_id, self.dim):
                        raise ConfigError(
                            f"the embedder loaded as {inner.model_id} ({inner.dim} dimensions), "
                            f"not the announced {self.model_id} ({self.dim})"
                        )
                    self._inner = inner
        return self._inner

    def embed(self, texts: list[str]) -> Vectors:
        return self.inner().embed(texts)
