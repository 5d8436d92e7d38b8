"""An embedder that serves vectors computed before a benchmark times anything, so the
figures measured are the store's and not the model's (``bench store``, ``bench scale``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from memstrata.embed.base import Embedder, Vectors


class Precomputed:
    """An embedder that serves the vectors of texts embedded beforehand (:meth:`warm`)
    and embeds any other text with ``inner`` (counted in ``misses``, not kept)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.known: dict[str, np.ndarray] = {}
        self.misses = 0

    def warm(
        self,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
        keep: Path | None = None,
    ) -> None:
        """Embed the texts not known yet; saved to ``keep`` every 10,240 texts and at the
        end, so an interrupted run resumes where it stopped."""
        todo = [t for t in dict.fromkeys(texts) if t not in self.known]
        for start in range(0, len(todo), 256):
            part = todo[start : start + 256]
            self.known.update(zip(part, self.inner.embed(part), strict=True))
            if progress is not None:
                progress(len(part))
            if keep is not None and (start // 256) % 40 == 39:
                self.save(keep)
        if keep is not None and todo:
            self.save(keep)

    def save(self, path: Path) -> None:
        texts = list(self.known)
        np.save(path, np.stack([self.known[t] for t in texts]) if texts else np.zeros((0, 0)))
        path.with_suffix(".json").write_text(json.dumps([self.model_id, texts]))

    def load(self, path: Path) -> None:
        """Vectors saved by :meth:`save` for the same model (others are ignored)."""
        names = path.with_suffix(".json")
        if not path.exists() or not names.exists():
            return
        model, texts = json.loads(names.read_text())
        if model == self.model_id:
            self.known.update(zip(texts, np.load(path), strict=True))

    def embed(self, texts: list[str]) -> Vectors:
        missing = [t for t in texts if t not in self.known]
        if not missing:
            return np.stack([self.known[t] for t in texts]) if texts else self.inner.embed([])
        self.misses += len(missing)
        fresh: dict[str, np.ndarray] = dict(zip(missing, self.inner.embed(missing), strict=True))
        return np.stack([self.known[t] if t in self.known else fresh[t] for t in texts])
