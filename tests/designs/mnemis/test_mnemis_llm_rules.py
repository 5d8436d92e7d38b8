"""Each rule of the Mnemis ``llm`` tier, driven by the scripted LLM backend."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime

import pytest

from memstrata.designs.mnemis.base_graph_llm import LLMBaseGraph
from memstrata.designs.mnemis.calls import category_grouper, node_selector
from memstrata.designs.mnemis.global_selection import select_llm
from memstrata.designs.mnemis.graph import Graph
from memstrata.designs.mnemis.hierarchy import Hierarchy, HierarchyParams
from memstrata.designs.mnemis.records import Category
from memstrata.llm import LLMClient
from memstrata.llm.fence import unfence
from memstrata.llm.scripted import ScriptedBackend
from memstrata.models import Entity, Episode, Fact, Span
from memstrata.store import PreparedEpisode, SQLiteStore


def episode(store: SQLiteStore, eid: str, text: str, when: datetime) -> Episode:
    import hashlib

    h = hashlib.sha256(text.encode()).digest()[:16]
    store.add_episodes(
        "t",
        [
            PreparedEpisode(
                external_id=eid,
                text=text,
                speaker="Maya",
                occurred_at=when,
                content_hash=h,
                index_text=text,
            )
        ],
    )
    [ep] = store.get_episodes("t", [eid])
    return ep


def contradiction(embedder) -> tuple[SQLiteStore, Graph, ScriptedBackend, LLMBaseGraph]:  # type: ignore[no-untyped-def]
    """Two turns through the scripted extraction: Maya works at Acme, then quits it for
    Globex (a reflection, a merge and a contradiction on the way)."""
    store = SQLiteStore(":memory:")
    e1 = episode(store, "e1", "I work at Acme in Lisbon.", datetime(2024, 1, 1, tzinfo=UTC))
    e2 = episode(store, "e2", "I quit ACME and joined Globex.", datetime(2024, 6, 1, tzinfo=UTC))

    def dedupe(messages) -> str:  # answers by name, whatever order the names were asked in
        import json

        asked = messages[-1].content
        res = [{"name": n, "duplicate_of": 0} for n in ("ACME", "Maya") if f"- {n} ->" in asked]
        res += [{"name": "Globex", "duplicate_of": -1}] if "- Globex ->" in asked else []
        return json.dumps({"resolutions": res})

    backend = ScriptedBackend(
        [
            {"names": ["Acme"]},
            {"names": ["Lisbon"]},  # reflection finds the missed name
            {"entities": [{"name": "Acme", "summary": "Maya's employer", "tag": ["company"]}]},
            {
                "facts": [
                    {
                        "source": "Maya",
                        "target": "Acme",
                        "relation": "works at",
                        "fact": "Maya works at Acme",
                        "valid_at": "2024-01-01",
                    }
                ]
            },
            {"facts": []},
            {"names": ["ACME", "Globex"]},
            {"names": []},
            dedupe,
            {"entities": []},
            {
                "facts": [
                    {
                        "source": "Maya",
                        "target": "Globex",
                        "relation": "works at",
                        "fact": "Maya works at Globex",
                    },
                    {
                        "source": "Maya",
                        "target": "ACME",
                        "relation": "left",
                        "fact": "Maya quit Acme",
                    },
                ]
            },
            {"facts": []},
            {"resolutions": [{"new_fact": 1, "duplicate_of": [], "contradicts": [0]}]},
        ]
    )
    graph = Graph(store, embedder, "t")
    builder = LLMBaseGraph(graph, LLMClient(backend, max_retries=0))
    asyncio.run(builder.add([e1, e2]))
    return store, graph, backend, builder


def test_reflection_dedup_and_contradiction(embedder) -> None:
    store, graph, backend, builder = contradiction(embedder)
    assert builder.failed == {} and backend.remaining == 0
    names = sorted(e.name for e in graph.entities.values())
    assert names == ["Acme", "Globex", "Lisbon", "Maya"]  # ACME merged into Acme
    acme = next(e for e in graph.entities.values() if e.name == "Acme")
    assert acme.aliases == ["ACME"] and acme.tags == ["company"]
    assert {s.episode for s in acme.sources} == {"e1", "e2"}  # episodic edges
    old = next(f for f in graph.facts.values() if f.fact == "Maya works at Acme")
    assert old.invalid_at == datetime(2024, 6, 1, tzinfo=UTC)  # superseded, not deleted
    assert len(graph.facts) == 3
    graph.flush()
    stored = {f.fact: f for f in store.get_records("t", "fact", builder=None)}
    assert stored["Maya works at Acme"].invalid_at is not None


def test_a_failing_stage_is_counted_and_the_episode_left_for_a_retry(embedder) -> None:
    store = SQLiteStore(":memory:")
    e1 = episode(store, "e1", "I like tea.", datetime(2024, 1, 1, tzinfo=UTC))
    backend = ScriptedBackend(["not json at all", "still not json"])
    builder = LLMBaseGraph(Graph(store, embedder, "t"), LLMClient(backend, max_retries=1))
    created = asyncio.run(builder.add([e1]))
    assert created == [] and list(builder.failed) == ["e1"]
    assert store.get_episodes("t", ["e1"])[0].text == "I like tea."


def _entities(graph: Graph, names: list[str]) -> list[str]:
    ids = []
    for n in names:
        ent = graph.add_entity(
            Entity(namespace="t", name=n, sources=[Span(episode="e1", start=0, end=1)])
        )
        ids.append(ent.id)
    return ids


def test_hierarchy_prompt_rules_n_many_to_many_and_no_and(embedder) -> None:
    store = SQLiteStore(":memory:")
    graph = Graph(store, embedder, "t")
    _entities(graph, ["apple", "cherry", "banana", "fire truck", "rose", "ant", "flea"])
    backend = ScriptedBackend(
        [
            {
                "categories": [
                    {"category": "Fruit", "indexes": [0, 1, 2]},
                    {"category": "Red things", "indexes": [0, 1, 3, 4]},
                    {"category": "Tiny", "indexes": [5, 6]},
                    {"category": "Food and Drinks", "indexes": [0, 1, 2]},
                ]
            },
            # Layer 2: five overlapping groups over four nodes breaks the reduction rule.
            {"categories": [{"category": f"G{i}", "indexes": [0, 1, 2]} for i in range(5)]},
        ]
    )
    h = Hierarchy(graph, HierarchyParams(n=3, top_width=1))
    counts = asyncio.run(h.rebuild(category_grouper(LLMClient(backend, max_retries=0))))
    assert counts == [4]  # the oversized layer 2 was not kept
    layer1 = {c.name: c for c in graph.layer(1)}
    assert set(layer1) == {"Fruit", "Red things", "ant", "flea"}  # "Tiny" < n dissolved
    apple = graph.by_key["apple"]
    assert apple in layer1["Fruit"].child_ids and apple in layer1["Red things"].child_ids
    assert len(layer1["ant"].child_ids) == 1  # promoted alone
    assert graph.top_layer() == 1


def test_global_selection_honours_get_all_children(embedder) -> None:
    store = SQLiteStore(":memory:")
    graph = Graph(store, embedder, "t")
    fruit = _entities(graph, ["apple", "pear", "plum"])
    tools = _entities(graph, ["hammer", "saw", "drill"])
    c_fruit = Category(
        id="abcdef" + "0" * 26, namespace="t", name="Fruit", layer=1, child_ids=fruit
    )
    c_tools = Category(namespace="t", name="Tools", layer=1, child_ids=tools)
    top = Category(namespace="t", name="Things", layer=2, child_ids=[c_fruit.id, c_tools.id])
    c_fruit.parent_ids = c_tools.parent_ids = [top.id]
    for c in (c_fruit, c_tools, top):
        graph.categories[c.id] = c
    backend = ScriptedBackend(
        [
            {"nodes": [{"name": "Things", "uuid": top.id[:8], "get_all_children": False}]},
            {
                "nodes": [
                    # copied in capitals and quoted: still the Fruit node
                    {"name": "Fruit", "uuid": '"ABCDEF00"', "get_all_children": True},
                    {"name": "Tools", "uuid": c_tools.id[:8], "get_all_children": False},
                ]
            },
            {"nodes": [{"name": "saw", "uuid": tools[1][:8], "get_all_children": False}]},
        ]
    )
    sel = asyncio.run(select_llm(graph, "fruit and a saw", node_selector(LLMClient(backend))))
    assert backend.remaining == 0
    assert set(sel.entities) == set(fruit) | {tools[1]}
    # Fruit's children were taken without being listed to the LLM again.
    listed = backend.requests[2].messages[-1].content
    assert "apple" not in listed and "hammer" in listed
    assert f'uuid: "{tools[0][:8]}"' in listed  # short ids, mapped back to the full ones


def test_contradiction_is_checked_against_facts_sharing_either_entity(embedder) -> None:
    store = SQLiteStore(":memory:")
    e1 = episode(store, "e1", "I work at Acme.", datetime(2024, 1, 1, tzinfo=UTC))
    e2 = episode(store, "e2", "I started at Globex today.", datetime(2024, 6, 1, tzinfo=UTC))
    backend = ScriptedBackend(
        [
            {"names": ["Acme"]},
            {"names": []},
            {"entities": []},
            {"facts": [{"source": "Maya", "target": "Acme", "fact": "Maya works at Acme"}]},
            {"facts": []},
            {"names": ["Globex"]},
            {"names": []},
            {"resolutions": [{"name": "Maya", "duplicate_of": 0}]},
            {"entities": []},
            {"facts": [{"source": "Maya", "target": "Globex", "fact": "Maya works at Globex"}]},
            {"facts": []},
            {"resolutions": [{"new_fact": 0, "duplicate_of": [], "contradicts": [0]}]},
        ]
    )
    graph = Graph(store, embedder, "t")
    builder = LLMBaseGraph(graph, LLMClient(backend, max_retries=0))
    asyncio.run(builder.add([e1, e2]))
    assert builder.failed == {} and backend.remaining == 0
    # (Maya, Globex) shares only Maya with (Maya, Acme), and the old fact was still asked.
    asked = backend.requests[-1].messages[-1].content
    assert "0: Maya works at Acme" in asked.split("<EXISTING FACTS>")[1]
    old = next(f for f in graph.facts.values() if f.fact == "Maya works at Acme")
    assert old.invalid_at == datetime(2024, 6, 1, tzinfo=UTC)


def test_appendix_d_prompt_in_full_and_llm_written_category_descriptions(embedder) -> None:
    store = SQLiteStore(":memory:")
    graph = Graph(store, embedder, "t")
    ids = _entities(graph, ["apple", "cherry", "banana", "pear", "plum", "fig"])
    graph.entities[ids[0]].tags = ["red fruit", "sweet"]
    backend = ScriptedBackend(
        [
            {
                "categories": [
                    {
                        "category": "Orchard fruit",
                        "description": "Fruit grown on trees",
                        "tag": ["fruit", "tree crop"],
                        "indexes": [0, 1, 3, 4],
                    },
                    {"category": "Soft fruit", "indexes": [2, 5, 1]},
                ]
            },
            {"categories": [{"category": "Fruit", "description": "Edible", "indexes": [0, 1]}]},
        ]
    )
    h = Hierarchy(graph, HierarchyParams(n=2, top_width=1))
    counts = asyncio.run(h.rebuild(category_grouper(LLMClient(backend, max_retries=0))))
    assert counts == [2, 1]
    first = backend.requests[0].messages
    system, user = first[0].content, unfence(first[1].content)
    for needed in (
        "maximum 5 descriptors",
        '"Family member", "Happy kid", "Anime lover"',
        "Microsoft Research Asia",
        "Layer 4 (top-level concepts)",
        '"Food and Drinks"',
    ):
        assert needed in system, needed
    assert "0. apple: [red fruit, sweet]" in user and "You are currently at Layer 1" in user
    assert "Reuse them if applicable" in user and "(none)" in user
    second = unfence(backend.requests[1].messages[1].content)
    assert "You are currently at Layer 2" in second
    # prev_example: categories of layer 1 with members; existing layer-2 categories none.
    assert 'Previous Layer 1 categories example:\n- "apple", "cherry"' in second
    orchard = next(c for c in graph.layer(1) if c.name == "Orchard fruit")
    assert orchard.summary == "Fruit grown on trees" and orchard.tags == ["fruit", "tree crop"]
    soft = next(c for c in graph.layer(1) if c.name == "Soft fruit")
    assert soft.summary.startswith("Soft fruit: ")  # the model wrote none: member-derived
    assert next(c for c in graph.layer(2)).summary == "Edible"


def test_lone_nodes_degrade_the_hierarchy_and_trigger_the_rebuild(embedder) -> None:
    graph = Graph(SQLiteStore(":memory:"), embedder, "t")
    ids = _entities(graph, ["apple", "cherry", "banana"])
    fruit = Category(namespace="t", name="Fruit", layer=1, child_ids=ids)
    graph.categories[fruit.id] = fruit
    h = Hierarchy(graph, HierarchyParams(n=3, rebuild_lone_share=0.25))
    assert h.lone_share() == 0.0 and not h.degraded()
    lone = _entities(graph, ["volcano", "tax return", "saxophone"])
    h.place(lone)
    assert h.lone_share() == 0.75  # three promoted alone beside one real category
    assert h.degraded()


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("2024-03-01", datetime(2024, 3, 1, tzinfo=UTC)),  # no offset: the episode's zone
        ("1 March 2024", datetime(2024, 3, 1, tzinfo=UTC)),  # in words: parsed, not lost
        ("March 2024", datetime(2024, 3, 1, tzinfo=UTC)),
        ("since spring", datetime(2024, 6, 1, tzinfo=UTC)),  # no date: the episode's time
    ],
)
def test_model_written_dates_take_the_episodes_time_zone(embedder, written, read) -> None:
    store = SQLiteStore(":memory:")
    e1 = episode(
        store, "e1", "I have worked at Acme since March.", datetime(2024, 6, 1, tzinfo=UTC)
    )
    backend = ScriptedBackend(
        [
            {"names": ["Acme"]},
            {"names": []},
            {"entities": []},
            {
                "facts": [
                    {
                        "source": "Maya",
                        "target": "Acme",
                        "fact": "Maya works at Acme",
                        "valid_at": written,
                        "invalid_at": "2024-09-01T02:00:00+02:00",
                    }
                ]
            },
            {"facts": []},
        ]
    )
    graph = Graph(store, embedder, "t")
    asyncio.run(LLMBaseGraph(graph, LLMClient(backend, max_retries=0)).add([e1]))
    (fact,) = graph.facts.values()
    assert fact.valid_at == read
    assert fact.invalid_at == datetime(2024, 9, 1, tzinfo=UTC)
    assert fact.valid_at <= e1.occurred_at < fact.invalid_at  # comparable, no TypeError


def test_global_selection_asks_a_wide_layer_in_chunks_and_takes_all_it_picks(
    embedder, model_tokens
) -> None:
    """No top-k: 45 entities under one category are shown 20 at a time, and every one the
    model picks is taken (the old schema stopped at 15), and each call's completion budget
    holds a reply that picks every node shown, counted in the bundled model's tokens (the
    old fixed budget of 320 cut such a reply after about ten nodes)."""
    from memstrata.designs.mnemis.global_selection import SELECT_CHUNK

    store = SQLiteStore(":memory:")
    graph = Graph(store, embedder, "t")
    names = [f"item {i}" for i in range(45)]
    kids = _entities(graph, names)
    top = Category(namespace="t", name="Items", layer=1, child_ids=kids)
    graph.categories[top.id] = top

    def pick_all(messages):  # type: ignore[no-untyped-def]
        listed = re.findall(r'name: "([^"]+)", uuid: "([^"]+)"', unfence(messages[-1].content))
        return json.dumps({"nodes": [{"name": n, "uuid": u} for n, u in listed]})

    backend = ScriptedBackend([{"nodes": [{"name": "Items", "uuid": top.id[:8]}]}] + [pick_all] * 3)
    sel = asyncio.run(select_llm(graph, "every item", node_selector(LLMClient(backend))))
    assert backend.remaining == 0  # one prompt for the top layer, three for 45 entities
    shown = [len(re.findall(r"uuid:", r.messages[-1].content)) for r in backend.requests[1:]]
    assert sorted(shown) == [5, SELECT_CHUNK, SELECT_CHUNK]
    assert set(sel.entities) == set(kids)
    for request in backend.requests:
        listed = re.findall(
            r'name: "([^"]+)", uuid: "([^"]+)"', unfence(request.messages[-1].content)
        )
        picks = [{"name": n, "uuid": u, "get_all_children": True} for n, u in listed]
        assert request.max_tokens >= model_tokens(json.dumps({"nodes": picks}))


def test_the_llm_tier_selects_hubs_and_a_named_hub_does_not_narrow(embedder) -> None:
    """The hub rules are the heuristic tier's: on the llm tier a hub the model picks is
    taken, its episodes are not narrowed, and a hub may be a linked entity."""
    store = SQLiteStore(":memory:")
    graph = Graph(store, embedder, "t")
    maya = graph.add_entity(
        Entity(
            namespace="t",
            name="Maya",
            entity_type="person",
            sources=[Span(episode=f"e{i}", start=0, end=1) for i in range(2, 10)],
        )
    ).id
    pottery = graph.add_entity(
        Entity(
            namespace="t",
            name="pottery",
            entity_type="activity",
            sources=[Span(episode=e, start=0, end=1) for e in ("e1", "e2")],
        )
    ).id
    graph.add_fact(
        Fact(
            namespace="t",
            subject_id=maya,
            object_id=pottery,
            fact="Maya makes pottery",
            sources=[Span(episode="e2", start=0, end=1)],
        )
    )
    graph.set_hub_share(0.5, 2)
    assert graph.hubs() == {maya}
    top = Category(namespace="t", name="All", layer=1, child_ids=[maya, pottery])
    graph.categories[top.id] = top
    backend = ScriptedBackend(
        [
            {"nodes": [{"name": "All", "uuid": top.id[:8]}]},
            {"nodes": [{"name": "pottery", "uuid": pottery[:8]}]},
        ]
    )
    sel = asyncio.run(
        select_llm(graph, "What pottery did Maya make?", node_selector(LLMClient(backend)))
    )
    assert sel.entities == [pottery] and sel.hubs == []
    assert sel.support == {"e1": 1, "e2": 1}  # not narrowed to Maya's episodes
    assert sel.linked_entities == [maya]  # the heuristic tier would leave the hub out


def test_a_descriptor_is_at_most_three_words_in_the_schema_as_in_the_prompt() -> None:
    """Appendix D: "each descriptor maximum 3 words". The schema says it too (a pattern a
    grammar-constrained model follows); from a model that ignores it, a longer descriptor
    is dropped and counted, the others kept."""
    from memstrata.designs.mnemis.prompts import (
        Attributes,
        CategoryDescriptions,
        CategoryGroups,
        entity_attributes,
    )
    from memstrata.llm.salvage import Salvage
    from memstrata.llm.schema import bounded_json_schema, parse_structured

    for model in (Attributes, CategoryGroups, CategoryDescriptions):
        assert '"pattern"' in json.dumps(bounded_json_schema(model)), model
    messages, _ = entity_attributes("[t] Maya: I work with data.", [], [("Maya", "")])
    assert "at most 3 words" in messages[0].content
    repairs = Salvage()
    tags = ["data engineer", "person who likes long walks", "pet-owner", "big data person"]
    reply = {"entities": [{"name": "Maya", "summary": "A data engineer.", "tag": tags}]}
    got = parse_structured(json.dumps(reply), Attributes, repairs)
    assert got.entities[0].tag == ["data engineer", "pet-owner", "big data person"]
    assert repairs.reasons == {"string_pattern_mismatch": 1}
