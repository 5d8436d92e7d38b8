"""Cleaner heuristic structures (issue 59, item 5): no Mnemis entity or category made of
greetings, interjections or function words, and categories whose members belong
together (closer to each other than names drawn at random)."""

from __future__ import annotations

from pathlib import Path

from tests.designs.chatter import built

from memstrata.eval.structures import cohesion, noise

#: how much closer (mean cosine, MiniLM) two members of a category are than two names
#: drawn at random (0.08 on this chat, 0.16 on ku-dev; docs/knowledge.md, "Cleaner
#: structures")
GAP = 0.05


def test_no_greeting_or_function_word_is_an_entity_or_a_category(tmp_path: Path, embedder) -> None:
    got = built(tmp_path, embedder, "mnemis", ("entity", "category"))
    names = [e.name for e in got["entity"]] + [c.name for c in got["category"]]
    assert [n for n in names if noise(n)] == []
    assert {"Jonas", "Cardiff", "Škoda", "Plzeň", "Leeds"} <= set(names)
    ents = {e.id: e.name for e in got["entity"]}
    groups = [
        [ents[i] for i in c.child_ids if i in ents]
        for c in got["category"]
        if c.layer == 1 and c.name != "Speaker"
    ]
    assert sum(len(g) >= 2 for g in groups) >= 3
    within, rand = cohesion(groups, embedder.embed)
    assert within >= rand + GAP, (within, rand)
