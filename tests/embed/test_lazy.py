"""The embedder a store opens with loads its model only when a text needs a vector."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memstrata.embed import Embedder, MiniLMEmbedder
from memstrata.embed.lazy import LazyEmbedder
from memstrata.errors import ConfigError
from memstrata.memory import Memory


class Loads:
    """A loader that hands out the real embedder and counts how often it was asked."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.calls = 0

    def __call__(self) -> Embedder:
        self.calls += 1
        return self.embedder


def test_only_what_embeds_loads_the_model(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    load = Loads(embedder)
    lazy = LazyEmbedder(embedder.model_id, embedder.dim, load)
    assert isinstance(lazy, Embedder)
    path = tmp_path / "m.db"
    with Memory.open(path, embedder=embedder) as m:  # a store with episodes in it
        m.add_many([{"id": "a", "text": "Ana planted basil."}, {"id": "b", "text": "Ben flies."}])
        m.update("a", "Ana planted basil and mint.")
    with Memory.open(path, embedder=lazy) as m:
        assert m.stats()["embedder"] == embedder.model_id
        assert m.namespaces() == ["default"] and m.get(["b"])[0].text == "Ben flies."
        assert len(m.history("a")) == 1
        assert m.delete(["b"]) == 1
        assert load.calls == 0 and not lazy.loaded
        assert m.search("what did Ana plant?").hits[0].id == "a"
        m.search("mint")
    assert load.calls == 1 and lazy.loaded
    text = ["what did Ana plant?"]
    assert np.array_equal(lazy.embed(text), embedder.embed(text))


def test_a_model_other_than_announced_is_refused(embedder: MiniLMEmbedder) -> None:
    lazy = LazyEmbedder("another-model", embedder.dim, lambda: embedder)
    with pytest.raises(ConfigError, match="loaded as all-MiniLM-L6-v2-int8 .* not the announced"):
        lazy.embed(["x"])
    assert not lazy.loaded
