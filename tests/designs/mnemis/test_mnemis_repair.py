"""Mnemis after a delete: a supersession whose cause went is undone, entities are
re-derived from the mentions they have left, and the hierarchy keeps its rules (a
category the cascade took while members remain comes back; one left below ``n`` members
is dissolved)."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime

from test_mnemis_llm_rules import contradiction, episode

from memstrata.designs.mnemis.builder import MnemisBuilder
from memstrata.designs.mnemis.checks import hierarchy_problems
from memstrata.designs.mnemis.graph import Graph
from memstrata.designs.mnemis.hierarchy import Hierarchy, HierarchyParams
from memstrata.engine.contracts import Context
from memstrata.models import Entity, Span
from memstrata.store import PreparedEpisode, SQLiteStore


def repair(store: SQLiteStore, embedder) -> None:  # type: ignore[no-untyped-def]
    work = store.pending_repairs("t", "mnemis")
    asyncio.run(MnemisBuilder().repair(Context(store, embedder), "t", work))


def test_a_fact_superseded_by_a_deleted_turn_is_valid_again(embedder) -> None:
    store, graph, _, _ = contradiction(embedder)  # e1: works at Acme; e2: quit it
    graph.flush()
    facts = store.get_records("t", "fact", builder="mnemis")
    old = next(f for f in facts if f.fact == "Maya works at Acme")
    assert old.invalid_at is not None and old.replaced_by

    store.delete_episodes("t", ["e2"])
    repair(store, embedder)
    facts = {f.fact: f for f in store.get_records("t", "fact", builder="mnemis")}
    assert sorted(facts) == ["Maya works at Acme"]
    assert facts["Maya works at Acme"].invalid_at is None
    assert facts["Maya works at Acme"].replaced_by == []
    acme = next(e for e in store.get_records("t", "entity", builder="mnemis") if e.name == "Acme")
    assert [s.episode for s in acme.sources] == ["e1"]
    assert acme.summary == "Maya: I work at Acme in Lisbon."  # from the mention left
    assert "Globex" not in {e.name for e in store.get_records("t", "entity", builder="mnemis")}


def _people(store: SQLiteStore, embedder) -> tuple[Graph, dict[str, str]]:  # type: ignore[no-untyped-def]
    when = datetime(2024, 1, 1, tzinfo=UTC)
    x1 = episode(store, "x1", "Bo, Cy, Dee and Eve met Zed at the pier.", when)
    x2 = episode(store, "x2", "Later Bo, Cy and Dee went sailing.", when)
    g = Graph(store, embedder, "t")
    ids = {}
    for name in ("Bo", "Cy", "Dee", "Eve", "Zed"):
        spans = [Span(episode=x1.id, start=x1.text.index(name), end=x1.text.index(name) + 2)]
        if name in x2.text:
            spans.append(
                Span(episode=x2.id, start=x2.text.index(name), end=x2.text.index(name) + 2)
            )
        ids[name] = g.add_entity(Entity(namespace="t", name=name, sources=spans)).id
    return g, ids


def test_a_category_the_cascade_took_comes_back_for_its_members(embedder) -> None:
    store = SQLiteStore(":memory:")
    g, ids = _people(store, embedder)
    hier = Hierarchy(g, HierarchyParams(n=3))
    friends = hier._new_category(1, "Friends", [ids["Bo"], ids["Cy"], ids["Dee"]])
    others = hier._new_category(1, "Others", [ids["Eve"], ids["Zed"], ids["Bo"]])
    top = hier._new_category(2, "People", [friends.id, others.id])
    g.flush()
    assert {s.episode for s in friends.sources} == {"x1"}  # first mentions only

    store.delete_episodes("t", ["x1"])  # Friends loses every source; its members stay
    assert friends.id not in {c.id for c in store.get_records("t", "category", builder=None)}
    repair(store, embedder)

    g = Graph.load(store, embedder, "t")
    assert sorted(e.name for e in g.entities.values()) == ["Bo", "Cy", "Dee"]
    back = g.categories[friends.id]
    assert back.child_ids == [ids["Bo"], ids["Cy"], ids["Dee"]]
    assert {s.episode for s in back.sources} == {"x2"}
    # Others keeps Bo alone (a lone category is allowed); People is left with two
    # children, fewer than n: it is dissolved into one lone parent per child
    assert g.categories[others.id].child_ids == [ids["Bo"]]
    assert top.id not in g.categories
    (parent,) = [g.categories[p] for p in back.parent_ids]
    assert parent.layer == 2 and parent.child_ids == [friends.id]
    assert hierarchy_problems(g, n=3) == []


def test_a_category_left_below_n_members_is_dissolved(embedder) -> None:
    store = SQLiteStore(":memory:")
    when = datetime(2024, 1, 1, tzinfo=UTC)
    g, ids = _people(store, embedder)
    x3 = episode(store, "x3", "Quinn joined them.", when)
    ids["Quinn"] = g.add_entity(
        Entity(namespace="t", name="Quinn", sources=[Span(episode=x3.id, start=0, end=5)])
    ).id
    hier = Hierarchy(g, HierarchyParams(n=3))
    crew = hier._new_category(1, "Crew", [ids["Bo"], ids["Cy"], ids["Quinn"]])
    rest = hier._new_category(1, "Rest", [ids["Dee"], ids["Eve"], ids["Zed"]])
    hier._new_category(2, "All", [crew.id, rest.id])
    g.flush()

    store.delete_episodes("t", ["x3"])
    repair(store, embedder)
    g = Graph.load(store, embedder, "t")
    assert crew.id not in g.categories
    lone = [c for c in g.layer(1) if len(c.child_ids) == 1]
    assert sorted(c.name for c in lone) == ["Bo", "Cy"]
    assert hierarchy_problems(g, n=3) == []
    assert "Quinn" not in " ".join(c.model_dump_json() for c in g.categories.values())


def test_records_other_designs_wrote_are_not_touched(embedder) -> None:
    store = SQLiteStore(":memory:")
    text = "Bo met Zed."
    store.add_episodes(
        "t",
        [
            PreparedEpisode(
                external_id="x",
                text=text,
                content_hash=hashlib.sha256(text.encode()).digest(),
                index_text=text,
            )
        ],
    )
    theirs = Entity(namespace="t", name="Zed", summary="Zed: met Bo", sources=[])
    store.put_records("t", [theirs], owner="other")
    g = Graph(store, embedder, "t")
    g.add_entity(Entity(namespace="t", name="Bo", sources=[Span(episode="x", start=0, end=2)]))
    g.flush()
    store.delete_episodes("t", ["x"])
    repair(store, embedder)
    (kept,) = store.get_records("t", "entity", builder=None)
    assert (
        kept.model_dump_json() == theirs.model_copy(update={"builder": "other"}).model_dump_json()
    )
