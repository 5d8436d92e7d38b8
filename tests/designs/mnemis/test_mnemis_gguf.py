"""The Mnemis ``llm`` tier through the real bundled GGUF model (SmolLM2-135M), end to end:
base graph (extraction, de-duplication, facts and their resolution), a multi-layer
hierarchy with the appendix D prompt, then Global Selection with ``get_all_children`` and
the LLM reranker over the union.

A 135M model writes poor structures (in our runs, entity names such as "Maliira_2023"),
so the assertions are on what the pipeline must do with whatever it answers: every
stage runs, a name the store already knows is offered for de-duplication and resolved
to one record, facts keep their validity window (an ``invalid_at``, when the model marks
a contradiction, is never before ``valid_at``), the layers obey the hierarchy rules, and
a node selected with ``get_all_children`` brings its whole subtree. This model, greedy,
neither marked a contradiction nor set ``get_all_children`` on these inputs; those two
rules are proven with the scripted backend in ``test_mnemis_llm_rules.py``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memstrata.designs.mnemis.extract import name_key
from memstrata.designs.mnemis.global_selection import _leaves, select_llm
from memstrata.designs.mnemis.graph import Graph
from memstrata.designs.mnemis.hierarchy import hierarchy_problems
from memstrata.designs.mnemis.prompts import node_selector
from memstrata.llm import LLMClient, make_backend
from memstrata.memory import Memory

pytestmark = pytest.mark.slow

DEEP = {
    "mnemis-deep": {
        "builders": [
            {"name": "mnemis", "params": {"hierarchy": {"n": 2, "top_width": 1, "max_layers": 3}}}
        ],
        "routes": [{"name": "mnemis"}],
        "fusion": {"kind_order": ["episode", "fact", "entity"], "budgets": {"episode": 1}},
    }
}
TURNS = [
    {
        "id": "g1",
        "text": "I work at Acme in Lisbon.",
        "speaker": "Maya",
        "occurred_at": "2024-01-05T09:00:00",
    },
    {
        "id": "g2",
        "text": "Acme gave me a laptop.",
        "speaker": "Maya",
        "occurred_at": "2024-02-05T09:00:00",
    },
    {
        "id": "g3",
        "text": "I quit Acme. I work at Globex now.",
        "speaker": "Maya",
        "occurred_at": "2024-06-05T09:00:00",
    },
]


def test_llm_tier_builds_and_searches_with_smollm2(tmp_path: Path, embedder) -> None:
    with Memory.open(tmp_path / "m.db", embedder=embedder, llm={"kind": "gguf"}, recipes=DEEP) as m:
        m.add_many(TURNS)
        (report,) = m.build(recipe="mnemis-deep", tier="llm")
        assert report.tier == "llm" and report.episodes + report.failed == 3
        usage = m.stats()["llm"]
        for stage in ("entities", "entities_reflect", "dedupe", "attributes", "hierarchy"):
            assert usage[f"mnemis.{stage}"]["calls"] >= 1, stage
        assert report.llm_failures == sum(u["failures"] for u in report.llm.values())
        graph = Graph.load(m.store, embedder, "default")
        r = m.search("Where does Maya work?", recipe="mnemis-deep", k=2, max_tokens=None)
        usage = m.stats()["llm"]
    # De-duplication: Maya speaks in all three turns and is one record citing all three.
    keys = [name_key(e.name) for e in graph.entities.values()]
    assert keys.count("maya") == 1
    maya = graph.entities[graph.by_key["maya"]]
    assert {s.episode for s in maya.sources} == {"g1", "g2", "g3"}
    assert len(keys) == len(set(keys)), keys  # no name stored twice
    # History: a contradicted fact is kept, closed at the time of the turn that ended it.
    for fact in graph.facts.values():
        assert fact.sources and fact.valid_at is not None
        if fact.invalid_at is not None:
            assert fact.invalid_at >= fact.valid_at
    # Hierarchy: at least two layers, every rule kept, categories described.
    assert graph.top_layer() >= 2
    assert hierarchy_problems(graph, n=2, max_layers=3) == []
    assert all(c.summary for c in graph.categories.values() if c.name != "Speaker")
    # Search: the LLM selected and reranked; episodes first, each hit with its sources.
    assert usage["mnemis.select"]["calls"] >= 2  # one call per layer walked
    assert usage["mnemis.rerank"]["calls"] >= 1
    assert r.hits[0].kind == "episode" and all(h.sources for h in r.hits)


def test_gguf_global_selection_takes_whole_subtrees(tmp_path: Path, embedder) -> None:
    """Global Selection alone, on a hierarchy the heuristic tier built: every node the
    model marks ``get_all_children`` contributes all of its leaves."""
    with Memory.open(tmp_path / "m.db", embedder=embedder, recipes=DEEP) as m:
        m.add_many(
            [
                {"id": f"h{i}", "text": t, "speaker": "Ana"}
                for i, t in enumerate(
                    [
                        "I play the guitar and the violin.",
                        "My dog and my cat sleep all day.",
                        "We flew to Paris, then Tokyo and Berlin.",
                        "I love sushi, pasta and fresh bread.",
                    ]
                )
            ]
        )
        m.build(recipe="mnemis-deep", tier="heuristic")
        graph = Graph.load(m.store, embedder, "default")
    llm = LLMClient(make_backend("gguf"))
    picks: list[tuple[str, bool]] = []
    selector = node_selector(llm)

    async def recording(query: str, nodes: list) -> list[tuple[str, bool]]:
        out = await selector(query, nodes)
        picks.extend(out)
        return out

    sel = asyncio.run(select_llm(graph, "Which instruments and pets does Ana have?", recording))
    assert graph.top_layer() >= 2 and picks
    chosen = set(sel.entities)
    whole = [p for p, all_kids in picks if all_kids]
    for short in whole:
        full = next((c for c in graph.categories if c.startswith(short)), None)
        if full is not None:
            assert set(_leaves(graph, full)) <= chosen
    assert sel.episodes or not chosen
