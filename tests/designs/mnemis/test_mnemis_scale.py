"""Mnemis building and searching stay cheap on long inputs."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from memstrata.designs.mnemis.base_graph import HeuristicBaseGraph
from memstrata.designs.mnemis.graph import Graph
from memstrata.models import Episode
from memstrata.store import SQLiteStore

UNIT = "I went hiking with Maya at the Blue Lake and my sister loved it. "


def _build_seconds(embedder, chars: int) -> tuple[float, Graph]:
    text = (UNIT * (chars // len(UNIT) + 1))[:chars]
    graph = Graph(SQLiteStore(":memory:"), embedder, "big")
    ep = Episode(id="e1", namespace="big", text=text, speaker="Ana", created_at=datetime.now(UTC))
    t = time.perf_counter()
    HeuristicBaseGraph(graph).add([ep])
    return time.perf_counter() - t, graph


def test_a_long_repetitive_episode_builds_in_linear_time(embedder) -> None:
    # Every sentence repeats the same names: a span-membership test that scans the
    # record's spans made this quadratic (100,000 characters took 33 s, 200,000 took 111 s).
    _build_seconds(embedder, 2_000)  # name embeddings cached
    small, _ = _build_seconds(embedder, 50_000)
    large, graph = _build_seconds(embedder, 400_000)
    assert large < 15, f"400,000 characters took {large:.1f} s"
    assert large < 8 * small * 2.5, (small, large)  # x8 the text; quadratic would be x64
    maya = graph.entities[graph.by_key["maya"]]
    assert len(maya.sources) == 400_000 // len(UNIT) + 1  # one span per sentence, none lost
    assert graph.episode_ids(maya.id) == ["e1"]
    whole = [f for f in graph.facts.values() if f.fact == "Ana: " + UNIT.strip()]
    assert len(whole) == 1 and len(whole[0].sources) >= len(maya.sources) - 1  # last one cut
