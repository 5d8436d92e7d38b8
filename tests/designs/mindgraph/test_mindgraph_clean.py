"""Cleaner heuristic structures (issue 59, item 5): no MindGraph node made of greetings,
interjections or function words ("wow", "now_i", "hi_jonas"), and every node labelled
by its text, not an internal id."""

from __future__ import annotations

from pathlib import Path

from tests.designs.chatter import built

from memstrata.designs.mindgraph.records import ConceptNode
from memstrata.eval.structures import noise


def test_nodes_are_named_by_their_text_and_none_is_a_greeting(tmp_path: Path, embedder) -> None:
    got = built(tmp_path, embedder, "mindgraph", ("concept_node",))
    nodes = [n for n in got["concept_node"] if isinstance(n, ConceptNode) and not n.graph]
    entities = [n.label for n in nodes if n.node_type == "entity"]
    assert [n for n in entities if noise(n)] == []
    assert {"Jonas", "Cardiff", "Škoda", "Plzeň", "Roath Park"} <= set(entities)
    texts = "\n".join(got["texts"])
    for n in nodes:  # a name, a value or a claim's first words, as written in a turn
        assert n.label and n.label.rstrip("…") in " ".join(texts.split()), n.label
        assert "#" not in n.label and ":" not in n.label.split()[0] and n.label != n.id
