"""Mnemis building stays linear on long inputs: the work done (span comparisons) is
counted, not timed, so a busy machine cannot fail it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memstrata.designs.mnemis.base_graph import HeuristicBaseGraph
from memstrata.designs.mnemis.graph import Graph
from memstrata.models import Episode, Span
from memstrata.store import SQLiteStore

UNIT = "I went hiking with Maya at the Blue Lake and my sister loved it. "


def _build(embedder: Any, chars: int) -> Graph:
    text = (UNIT * (chars // len(UNIT) + 1))[:chars]
    graph = Graph(SQLiteStore(":memory:"), embedder, "big")
    ep = Episode(id="e1", namespace="big", text=text, speaker="Ana", created_at=datetime.now(UTC))
    HeuristicBaseGraph(graph).add([ep])
    return graph


def test_a_long_repetitive_episode_builds_in_linear_work(
    embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every sentence repeats the same names: a span-membership test that scanned the
    # record's spans made this quadratic (100,000 characters took 33 s, 200,000 took
    # 111 s). Such a scan compares spans one by one; a set compares almost none.
    compared = {"n": 0}
    equal = Span.__eq__

    def counting(self: Span, other: object) -> bool:
        compared["n"] += 1
        return equal(self, other)

    monkeypatch.setattr(Span, "__eq__", counting)
    graph = _build(embedder, 400_000)
    sentences = 400_000 // len(UNIT) + 1
    maya = graph.entities[graph.by_key["maya"]]
    assert len(maya.sources) == sentences  # one span per sentence, none lost
    # A scan would compare about sentences**2 / 2 (18 million) spans.
    assert compared["n"] <= 4 * sentences, compared
    assert graph.episode_ids(maya.id) == ["e1"]
    whole = [f for f in graph.facts.values() if f.fact == "Ana: " + UNIT.strip()]
    assert len(whole) == 1 and len(whole[0].sources) >= len(maya.sources) - 1  # last one cut
