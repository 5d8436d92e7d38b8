"""Keeping the Mnemis hierarchy current in the ``llm`` tier: categories whose children
change are described again by the model, and a degraded hierarchy is rebuilt by the
builder itself. The LLM is scripted; store, embeddings and builder are real."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from memstrata.config import Config
from memstrata.designs.mnemis.calls import category_describer
from memstrata.designs.mnemis.checks import hierarchy_problems
from memstrata.designs.mnemis.graph import PAPER_BUILDER, Graph
from memstrata.designs.mnemis.hierarchy import Hierarchy, HierarchyParams
from memstrata.designs.mnemis.records import Category
from memstrata.llm import LLMClient
from memstrata.llm.fence import unfence
from memstrata.llm.scripted import ScriptedBackend
from memstrata.memory import Memory
from memstrata.models import Entity, Span
from memstrata.store import SQLiteStore
from memstrata.store.base import Store

FRUIT = {"apple", "pear", "plum", "cherry", "apricot"}


def _entities(graph: Graph, names: list[str]) -> list[str]:
    ids = []
    for name in names:
        tags = ["fruit"] if name in FRUIT else []
        ent = Entity(
            namespace="t", name=name, tags=tags, sources=[Span(episode="e1", start=0, end=1)]
        )
        ids.append(graph.add_entity(ent).id)
    return ids


def test_a_category_that_gains_a_child_is_described_again_from_its_members(embedder) -> None:
    graph = Graph(SQLiteStore(":memory:"), embedder, "t")
    ids = _entities(graph, ["apple", "pear", "plum", "cherry"])
    fruit = Category(namespace="t", name="Fruit", layer=1, summary="Tree fruit", child_ids=ids)
    graph.categories[fruit.id] = fruit
    h = Hierarchy(graph, HierarchyParams(n=3))
    assert h.changed() == []
    backend = ScriptedBackend(
        [
            "not json",  # the first describing call fails: the text stays, the mark too
            {"categories": [{"index": 0, "description": "Stone and pome fruit", "tag": ["fruit"]}]},
        ]
    )
    describer = category_describer(LLMClient(backend, max_retries=0, output_retries=0))
    [apricot] = _entities(graph, ["apricot"])
    h.place([apricot])
    assert apricot in fruit.child_ids and h.changed() == [fruit.id]
    assert asyncio.run(h.redescribe(describer)) == 0
    assert fruit.summary == "Tree fruit" and h.changed() == [fruit.id]
    assert asyncio.run(h.redescribe(describer)) == 1
    assert fruit.summary == "Stone and pome fruit" and fruit.tags == ["fruit"]
    assert h.changed() == []
    user = unfence(backend.requests[-1].messages[1].content)
    assert "0. Fruit" in user and "current description: Tree fruit" in user
    assert "apricot: [fruit]" in user and "apple: [fruit]" in user
    system = backend.requests[-1].messages[0].content
    assert "maximum 5 descriptors" in system and "NOT relying solely on the DESCRIPTIONS" in system
    # The schema allows one description per category shown, no more.
    schema = backend.requests[-1].json_schema or {}
    assert schema["properties"]["categories"]["maxItems"] == 1


def _scripted_model(monkeypatch: pytest.MonkeyPatch) -> ScriptedBackend:
    """Memory's model is :func:`_answer`, scripted; returns its backend."""
    backend = ScriptedBackend([_answer] * 400)

    def scripted(config: Config, store: Store, namespace: str | None = None) -> LLMClient:
        return LLMClient(backend, usage=store, namespace=namespace)

    monkeypatch.setattr("memstrata.memory.make_llm", scripted)
    return backend


def _turn(i: int, thing: str) -> dict:
    return {"id": f"t{i}", "text": f"I like {thing}.", "speaker": "Maya"}


def _answer(messages) -> str:  # type: ignore[no-untyped-def]
    """The scripted model: extracts the liked thing, groups fruit together, describes."""
    system, user = messages[0].content, unfence(messages[-1].content)
    if "You extract entity names" in system:
        current = user.split("<CURRENT EPISODE>")[-1]
        return json.dumps({"names": re.findall(r"I like ([a-z ]+)\.", current)})
    if "You check" in system:
        return json.dumps({"names": []} if "entity extraction" in system else {"facts": []})
    if "You de-duplicate" in system:
        names = re.findall(r"^- (.+?) -> ", user, flags=re.M)
        return json.dumps({"resolutions": [{"name": n, "duplicate_of": -1} for n in names]})
    if "concise summary" in system:
        names = re.findall(r"^- ([a-z ]+): ", user, flags=re.M)
        return json.dumps(
            {
                "entities": [
                    {"name": n, "summary": f"{n}", "tag": ["fruit" if n in FRUIT else "thing"]}
                    for n in names
                ]
            }
        )
    if "You extract facts" in system:
        return json.dumps({"facts": []})
    if "semantic categorization" in system:
        nodes = re.findall(r"^(\d+)\. ([^:]+): \[", user, flags=re.M)
        fruit = [int(i) for i, n in nodes if n in FRUIT]
        rest = [int(i) for i, n in nodes if n not in FRUIT]
        groups = [{"category": "Fruit", "description": "Fruit Maya likes", "indexes": fruit}]
        if rest:
            groups.append({"category": "Other things", "description": "Misc", "indexes": rest})
        return json.dumps({"categories": [g for g in groups if g["indexes"]]})
    if "descriptions of categories" in system:
        blocks = re.findall(r"^(\d+)\. [^\n]+\n[^\n]+\n\s+members: ([^\n]+)", user, flags=re.M)
        return json.dumps(
            {
                "categories": [
                    {"index": int(i), "description": f"Now: {m}", "tag": ["fruit"]}
                    for i, m in blocks
                ]
            }
        )
    if "hierarchical knowledge graph" in system:  # Global Selection: every node shown
        nodes = re.findall(r'name: "([^"]*)", uuid: "([^"]*)"', user)
        return json.dumps({"nodes": [{"name": n, "uuid": u} for n, u in nodes]})
    if "Order the" in system:  # the reranker: the order shown
        return json.dumps({"order": list(range(len(re.findall(r"^\d+: ", user, re.M))))})
    if "You answer questions from a memory" in system:
        ids = re.findall(r"^\[([^\],]+)", user, flags=re.M)
        return json.dumps({"answer": "Fruit", "sources": ids[:1]})
    raise AssertionError(f"unexpected prompt: {system[:80]}")


def test_the_builder_describes_changed_categories_and_rebuilds_a_degraded_hierarchy(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = _scripted_model(monkeypatch)
    with Memory.open(tmp_path / "m.db", embedder=embedder, llm={"kind": "gguf"}) as m:
        m.add_many([_turn(i, t) for i, t in enumerate(["apple", "pear", "plum", "cherry"])])
        (first,) = m.build(recipe="mnemis", tier="llm")
        assert first.details["hierarchy"] == "built"
        graph = Graph.load(m.store, embedder, "default")
        [fruit] = [c for c in graph.layer(1) if c.name == "Fruit"]
        assert fruit.summary == "Fruit Maya likes"

        # One more fruit: placed under Fruit, which the model then describes again.
        m.add_many([_turn(4, "apricot")])
        (second,) = m.build(recipe="mnemis", tier="llm")
        assert second.details["hierarchy"] == "incremental"
        assert second.llm["mnemis.describe"]["calls"] == 1
        graph = Graph.load(m.store, embedder, "default")
        fruit = graph.categories[fruit.id]
        assert "apricot" in [graph.name_of(k) for k in fruit.child_ids]
        assert fruit.summary.startswith("Now: ") and "apricot" in fruit.summary

        # Three unrelated things are promoted alone: the hierarchy degrades and the
        # builder rebuilds it with the appendix D prompt, in the same drain.
        m.add_many([_turn(5 + i, t) for i, t in enumerate(["volcano", "tax return", "saxophone"])])
        hierarchy_calls = backend_calls(backend, "semantic categorization")
        (third,) = m.build(recipe="mnemis", tier="llm")
        assert third.details["hierarchy"] == "rebuilt"
        assert backend_calls(backend, "semantic categorization") > hierarchy_calls
        graph = Graph.load(m.store, embedder, "default")
    assert hierarchy_problems(graph) == []
    names = {c.name for c in graph.layer(1)}
    assert {"Fruit", "Other things"} <= names
    other = next(c for c in graph.layer(1) if c.name == "Other things")
    assert {graph.name_of(k) for k in other.child_ids} == {"volcano", "tax return", "saxophone"}
    assert third.details["lone_share"] == 0.0


def backend_calls(backend: ScriptedBackend, phrase: str) -> int:
    return sum(phrase in r.messages[0].content for r in backend.requests)


def test_a_category_that_loses_a_member_is_described_again_and_its_mark_is_stored(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleting the turn behind one fruit repairs the hierarchy: Fruit loses that member,
    and the llm tier's repair has the model describe Fruit again from the members left
    (a description it wrote would otherwise go on naming what was deleted). A mark the
    model could not clear is stored with the category and survives a reload."""
    backend = _scripted_model(monkeypatch)
    with Memory.open(tmp_path / "m.db", embedder=embedder, llm={"kind": "gguf"}) as m:
        m.add_many([_turn(i, t) for i, t in enumerate(["apple", "pear", "plum", "cherry"])])
        m.build(recipe="mnemis", tier="llm")
        [fruit] = [
            c for c in Graph.load(m.store, embedder, "default").layer(1) if c.name == "Fruit"
        ]
        assert fruit.summary == "Fruit Maya likes" and not fruit.children_changed
        described = backend_calls(backend, "descriptions of categories")
        m.delete(["t1"])  # "I like pear."
        m.build(recipe="mnemis", tier="llm")
        graph = Graph.load(m.store, embedder, "default")
        fruit = graph.categories[fruit.id]
        members = {graph.name_of(k) for k in fruit.child_ids}
        assert members == {"apple", "plum", "cherry"}
        assert backend_calls(backend, "descriptions of categories") == described + 1
        assert fruit.summary.startswith("Now: ") and "pear" not in fruit.summary
        assert not fruit.children_changed

        # a mark is stored: a reloaded hierarchy still knows what to describe again
        Hierarchy(graph).mark_changed(fruit)
        graph.flush()
        again = Graph.load(m.store, embedder, "default")
        assert Hierarchy(again).changed() == [fruit.id]


def test_the_heuristic_tier_leaves_no_mark_behind(tmp_path: Path, embedder) -> None:
    """Marks are the llm tier's work list: the heuristic tier derives its descriptions
    itself and clears them, so a later llm-tier batch does not describe every category
    the heuristic tier ever changed."""
    places = ["Paris", "Lisbon", "Porto", "Madrid", "Rome", "Vienna", "Prague", "Berlin"]
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        m.add_many([_visit(i, p) for i, p in enumerate(places[:6])])
        m.build(recipe="mnemis", tier="heuristic")
        m.add_many([_visit(6 + i, p) for i, p in enumerate(places[6:])])
        (report,) = m.build(recipe="mnemis", tier="heuristic")
        assert report.details["hierarchy"] == "incremental"
        graph = Graph.load(m.store, embedder, "default")
    assert graph.categories and not any(c.children_changed for c in graph.categories.values())


def _visit(i: int, place: str) -> dict:
    return {"id": f"v{i}", "text": f"Last year Maya visited {place} with Tomas.", "speaker": "Maya"}


def test_the_paper_recipe_builds_rebuilds_and_answers_on_the_llm_tier(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mnemis-paper``: the hierarchy prompt in the paper's words; a later turn's entity
    makes the builder rebuild the hierarchy with it (no placement, no describing
    prompt); the search and the answer go through the model."""
    backend = _scripted_model(monkeypatch)
    with Memory.open(tmp_path / "m.db", embedder=embedder, llm={"kind": "gguf"}) as m:
        m.add_many([_turn(i, t) for i, t in enumerate(["apple", "pear", "plum", "cherry"])])
        (first,) = m.build(recipe="mnemis-paper", tier="llm")
        assert first.details["hierarchy"] == "built"
        grouped = backend_calls(backend, "semantic categorization")
        assert grouped and backend_calls(backend, '- "University and Courses"') == grouped
        m.add_many([_turn(4, "apricot")])
        (second,) = m.build(recipe="mnemis-paper", tier="llm")
        assert second.details["hierarchy"] == "rebuilt"
        assert backend_calls(backend, "semantic categorization") > grouped
        assert backend_calls(backend, "descriptions of categories") == 0
        graph = Graph.load(m.store, embedder, "default", PAPER_BUILDER)
        [fruit] = [c for c in graph.layer(1) if c.name == "Fruit"]
        assert {graph.name_of(k) for k in fruit.child_ids} == FRUIT
        assert not Graph.load(m.store, embedder, "default").entities  # mnemis's: none
        answer = m.ask("Which fruit does Maya like?", recipe="mnemis-paper", k=25)
        selected = backend_calls(backend, "- Likely has sub-nodes that may be helpful.")
        reranked = backend_calls(backend, "Order the")
    assert answer.text == "Fruit" and answer.sources
    # a prompt per layer walked; one rerank call per union, episodes' and entities'
    # (the scripted model extracts no fact)
    assert selected >= 2 and reranked == 2
    assert hierarchy_problems(graph) == []
