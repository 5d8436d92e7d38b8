"""The Mnemis ``llm`` tier through the real bundled GGUF model (SmolLM2-135M), greedy.

* A three-turn build and search: extraction, de-duplication of the speaker into one
  record citing every turn, facts with their validity windows, a multi-layer hierarchy
  with the appendix D prompt, Global Selection and the LLM reranker.
* Fact resolution on a changed fact ("Tom is married to Ana", then three months later
  "Tom divorced Ana. Tom is married to Eva now."): both turns' facts are kept with
  well-ordered validity windows and stay searchable.
* Global Selection: over a hierarchy built by the heuristic tier, the model marks
  categories ``get_all_children``; every entity under them is selected, including
  entities the model was never shown.

A 135M model does not judge: probed directly, its resolution and selection answers follow
the shape of the prompt's JSON format line whatever the facts or the query (the same
answer for a contradiction and for a restated fact). Selection's format line gives the
field's type (``<boolean>``, the paper's wording), so the model takes whole subtrees and
``get_all_children`` is exercised for real. The resolution line shows empty lists: an
example with a contradiction in it made this model close an unrelated fact whenever it
saw two, so the bundled model would damage the history it is meant to keep. Marking a
contradiction (``invalid_at`` set on the old fact, the fact kept) is therefore proven
with the scripted backend in ``test_mnemis_llm_rules.py``, not through this model.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memstrata.designs.mnemis.calls import node_selector
from memstrata.designs.mnemis.checks import hierarchy_problems
from memstrata.designs.mnemis.extract import name_key
from memstrata.designs.mnemis.global_selection import select_llm
from memstrata.designs.mnemis.graph import Graph
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


# A ceiling on every call's completion (``llm.max_tokens``): the hierarchy stage's replies
# run to its 720-token budget with this model, and a reply cut at the ceiling is closed
# and parsed like any cut reply; the build is checked for its structure, not its length.
CEILING = 256


def test_llm_tier_builds_and_searches_with_smollm2(tmp_path: Path, embedder) -> None:
    llm = {"kind": "gguf", "max_tokens": CEILING}
    with Memory.open(tmp_path / "m.db", embedder=embedder, llm=llm, recipes=DEEP) as m:
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
    assert usage["mnemis.select"]["calls"] >= 1
    assert usage["mnemis.rerank"]["calls"] >= 1
    assert r.hits[0].kind == "episode" and all(h.sources for h in r.hits)


SHALLOW = {
    "mnemis-shallow": {
        "builders": [
            {"name": "mnemis", "params": {"hierarchy": {"n": 2, "top_width": 1, "max_layers": 1}}}
        ],
        "routes": [{"name": "mnemis"}],
    }
}
# Two turns three months apart; the second ends the marriage the first states.
CHANGE = [
    {
        "id": "t1",
        "text": "Tom is married to Ana. They live in Paris.",
        "speaker": "Tom",
        "occurred_at": "2024-01-01T00:00:00+00:00",
    },
    {
        "id": "t2",
        "text": "Tom divorced Ana. Tom is married to Eva now.",
        "speaker": "Tom",
        "occurred_at": "2024-04-01T00:00:00+00:00",
    },
]


def test_gguf_fact_resolution_on_a_changed_fact(tmp_path: Path, embedder) -> None:
    """A changed marriage through the real model: the first turn's facts reach the
    resolution step beside the second turn's, and whatever it answers, no fact is lost
    and every window is well ordered. The model writes its dates without an offset while
    the episodes carry one; before they were read in the episode's zone, comparing them
    raised TypeError here. (This model does not mark the contradiction: see above.)"""
    recipe = "mnemis-shallow"
    llm = {"kind": "gguf", "max_tokens": CEILING}
    # the build through the model; the search on the heuristic tier (the llm tier's
    # selection and reranking are the first test's)
    heuristic = {"retrieval.tier": "heuristic"}
    with Memory.open(
        tmp_path / "m.db", embedder=embedder, llm=llm, recipes=SHALLOW, **heuristic
    ) as m:
        m.add_many(CHANGE)
        (report,) = m.build(recipe=recipe, tier="llm")
        assert report.failed == 0
        assert m.stats()["llm"]["mnemis.facts_resolve"]["calls"] >= 1
        graph = Graph.load(m.store, embedder, "default")
        r = m.search("Who is Tom married to?", recipe=recipe, k=10, max_tokens=None)
    by_turn = {
        t: [f for f in graph.facts.values() if {s.episode for s in f.sources} == {t}]
        for t in ("t1", "t2")
    }
    assert by_turn["t1"] and by_turn["t2"], [f.fact for f in graph.facts.values()]
    for fact in graph.facts.values():
        assert fact.valid_at is not None and fact.valid_at.tzinfo is not None
        if fact.invalid_at is not None:
            assert fact.invalid_at >= fact.valid_at
    # The first turn's facts stay searchable, each with its validity window.
    returned = {h.id: h for h in r.hits if h.kind == "fact"}
    assert any(f.id in returned for f in by_turn["t1"])
    for h in returned.values():
        assert h.metadata["valid_at"] is not None and "(valid " in h.text


def _entities_under(graph: Graph, cat_id: str) -> set[str]:
    out: set[str] = set()
    stack = [cat_id]
    while stack:
        node = stack.pop()
        if node in graph.entities:
            out.add(node)
        else:
            stack.extend(graph.categories[node].child_ids)
    return out


def test_gguf_global_selection_takes_whole_subtrees(tmp_path: Path, embedder) -> None:
    """Global Selection alone, on a hierarchy the heuristic tier built: categories the
    model marks ``get_all_children`` bring their whole subtrees, lower layers unseen."""
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
    assert graph.top_layer() >= 2
    llm = LLMClient(make_backend("gguf"))
    shown: list[str] = []
    picks: list[tuple[str, bool]] = []
    selector = node_selector(llm)

    async def recording(query: str, nodes: list) -> list[tuple[str, bool]]:
        shown.extend(uid for uid, _, _ in nodes)
        out = await selector(query, nodes)
        picks.extend(out)
        return out

    sel = asyncio.run(select_llm(graph, "Which instruments and pets does Ana have?", recording))
    # The model chose get_all_children on at least one category (it may also mark an
    # entity so, which has no sub-nodes).
    # Only an id that is one shown counts, as in select_llm (a model may write a part of
    # one, or an empty string, which every category id starts with).
    ids = {sid.casefold() for sid in shown}
    named = [uid.strip(" \"'`").casefold() for uid, all_kids in picks if all_kids]
    whole = [c for sid in named if sid in ids for c in graph.categories if c.startswith(sid)]
    assert whole, picks
    chosen = set(sel.entities)
    for cat in whole:
        under = _entities_under(graph, cat)
        assert under and under <= chosen
    # Taken whole: some entities were never listed to the model, yet they are selected.
    assert any(not any(e.startswith(s) for s in shown) for e in chosen)
    # Which categories the 135M model picks is its own choice (and the hierarchy it sees
    # can differ by a tie between near-equal vectors on a loaded machine): what is
    # checked is what the selection does with its picks, not their wisdom.
    assert sel.episodes and set(sel.support) <= {"h0", "h1", "h2", "h3"}


def test_gguf_describes_a_category_again_when_it_gains_a_child(embedder) -> None:
    """A category placed a new child is described again by the model, from its members."""
    from memstrata.designs.mnemis.calls import category_describer
    from memstrata.designs.mnemis.hierarchy import Hierarchy, HierarchyParams
    from memstrata.designs.mnemis.records import Category
    from memstrata.models import Entity, Span
    from memstrata.store import SQLiteStore

    graph = Graph(SQLiteStore(":memory:"), embedder, "t")

    def entity(name: str) -> str:
        ent = Entity(
            namespace="t", name=name, tags=["fruit"], sources=[Span(episode="e", start=0, end=1)]
        )
        return graph.add_entity(ent).id

    ids = [entity(n) for n in ("apple", "pear", "plum", "cherry")]
    fruit = Category(namespace="t", name="Fruit", layer=1, summary="Old text", child_ids=ids)
    graph.categories[fruit.id] = fruit
    h = Hierarchy(graph, HierarchyParams(n=3))
    h.place([entity("apricot")])
    assert h.changed() == [fruit.id]
    llm = LLMClient(make_backend("gguf"))
    assert asyncio.run(h.redescribe(category_describer(llm))) == 1
    assert fruit.summary and fruit.summary != "Old text" and len(fruit.summary) <= 160
    assert 1 <= len(fruit.tags) <= 5 and h.changed() == []
