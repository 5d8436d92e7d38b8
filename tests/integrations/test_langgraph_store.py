"""``MemstrataStore`` against LangGraph's own reference, its ``InMemoryStore``.

Each scenario runs the same operations on both stores and compares what they return:
namespaces listed with prefixes, suffixes, wildcards, depth and pages; items got, put,
replaced and deleted; filtered searches with every operator; a batch's reads and writes.
Searches by a query are compared where both stores must agree whatever their ranking
(which items come back, the best one when one item alone matches the query's words);
the reference ranks by MiniLM's cosine here, memstrata by its recipe.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from memstrata import AsyncMemory, InvalidInputError, Memory
from memstrata.embed import MiniLMEmbedder
from memstrata.integrations.langgraph import MemstrataStore

NAMESPACES = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("admin", "users", "789"),
    ("b", "a", "f"),
    ("guests", "456", "preferences"),
    ("users", "123"),
    ("users", "456", "settings"),
]

FRUIT = [
    ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
    ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
    ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
    ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ("doc5", {"text": "yellow bicycle", "color": "yellow", "score": 2.0, "tags": ["x", "y"]}),
    ("doc6", {"text": "purple plum", "score": 5.0, "meta": {"farm": "north", "kg": 2}}),
]


@pytest.fixture
def memory(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[Memory]:
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        yield m


@pytest.fixture
def pair(memory: Memory, embedder: MiniLMEmbedder) -> tuple[BaseStore, BaseStore]:
    """(memstrata's store, LangGraph's reference store ranking by the same MiniLM)."""
    reference = InMemoryStore(
        index={"dims": 384, "embed": lambda texts: embedder.embed(texts).tolist()}
    )
    return MemstrataStore(memory), reference


def both(pair: tuple[BaseStore, BaseStore], method: str, *args: Any, **kwargs: Any) -> Any:
    ours, reference = (getattr(store, method)(*args, **kwargs) for store in pair)
    return ours, reference


def _keys(items: list[Any]) -> list[tuple[tuple[str, ...], str, Any]]:
    return [(tuple(i.namespace), i.key, i.value) for i in items]


# namespaces ------------------------------------------------------------------------------
LISTINGS: list[dict[str, Any]] = [
    {},
    {"prefix": ("a", "b")},
    {"suffix": ("f",)},
    {"prefix": ("a",), "suffix": ("f",)},
    {"prefix": ("a", "b"), "max_depth": 3},
    {"max_depth": 2},
    {"max_depth": 1},
    {"prefix": ("a", "b"), "limit": 2},
    {"prefix": ("a", "b"), "offset": 2},
    {"prefix": ("a", "b"), "offset": 1, "limit": 2},
    {"prefix": ("a", "*", "f")},
    {"suffix": ("*", "f")},
    {"prefix": ("users", "*")},
    {"suffix": ("*", "preferences")},
    {"prefix": ("*", "users"), "suffix": ("*", "settings")},
    {"prefix": ("nonexistent",)},
    {"prefix": ("users", "123")},
    {"prefix": ("a", "b", "c", "d", "e")},
]


def test_an_empty_store_lists_no_namespace(pair: tuple[BaseStore, BaseStore]) -> None:
    assert both(pair, "list_namespaces") == ([], [])


@pytest.mark.parametrize("listing", LISTINGS, ids=lambda kw: json.dumps(kw))
def test_namespaces_are_listed_as_the_reference_lists_them(
    pair: tuple[BaseStore, BaseStore], listing: dict[str, Any]
) -> None:
    for store in pair:
        for i, ns in enumerate(NAMESPACES):
            store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    ours, reference = both(pair, "list_namespaces", **listing)
    assert ours == reference


def test_namespaces_page_in_order(pair: tuple[BaseStore, BaseStore]) -> None:
    for store in pair:
        for i in range(12):
            store.put(("space", f"sub_{i:02d}"), f"id_{i}", {"n": i})
    for offset in (0, 5, 10):
        ours, reference = both(pair, "list_namespaces", prefix=("space",), limit=5, offset=offset)
        assert ours == reference and len(ours) == min(5, 12 - offset)


def test_a_namespace_goes_with_its_last_item(memory: Memory) -> None:
    """LangGraph's stores list a namespace while it holds items (the in-memory reference
    keeps an emptied one listed, its databases do not): memstrata forgets it."""
    store = MemstrataStore(memory)
    store.put(("users", "u1"), "k1", {"text": "likes tea"})
    store.put(("users", "u1"), "k2", {"text": "plays chess"})
    store.delete(("users", "u1"), "k1")
    assert store.list_namespaces() == [("users", "u1")]
    store.delete(("users", "u1"), "k2")
    assert store.list_namespaces() == []
    assert memory.namespaces() == []
    store.delete(("users", "nobody"), "k3")  # deleting what is not there is no error


# items -------------------------------------------------------------------------------------
def test_items_are_got_put_replaced_and_deleted_as_in_the_reference(
    pair: tuple[BaseStore, BaseStore], memory: Memory
) -> None:
    ours, reference = pair
    for store in pair:
        store.put(("docs", "u1"), "k1", {"text": "first", "n": 1})
        store.put(("docs", "u1"), "k2", {"text": "second", "nested": {"a": [1, 2]}})
    assert _keys([ours.get(("docs", "u1"), "k1")]) == _keys([reference.get(("docs", "u1"), "k1")])
    first = ours.get(("docs", "u1"), "k1")
    assert first is not None and first.created_at <= first.updated_at
    for store in pair:
        store.put(("docs", "u1"), "k1", {"text": "changed", "n": 2})
    again = ours.get(("docs", "u1"), "k1")
    assert again is not None and again.value == {"text": "changed", "n": 2}
    assert again.created_at == first.created_at and again.updated_at > first.updated_at
    assert both(pair, "get", ("docs", "u1"), "missing") == (None, None)
    assert both(pair, "get", ("nowhere",), "k1") == (None, None)
    with pytest.raises(InvalidNamespaceError):  # LangGraph's check, before any store's
        ours.get(("docs", "u1.x"), "k1")
    assert ours.batch([GetOp(("docs", "u1.x"), "k1")]) == [None]  # past it: not found
    for store in pair:
        store.delete(("docs", "u1"), "k1")
    assert both(pair, "get", ("docs", "u1"), "k1") == (None, None)
    assert _keys([ours.get(("docs", "u1"), "k2")]) == _keys([reference.get(("docs", "u1"), "k2")])
    # each item is an episode: its key is the episode's id, its versions its history
    (episode,) = memory.get("k2", namespace="docs.u1")
    assert episode.text == "second"
    memory.add("a note written outside the graph", id="n1", namespace="docs.u1")
    outside = ours.get(("docs", "u1"), "n1")
    assert outside is not None and outside.value == {"text": "a note written outside the graph"}


def test_a_replaced_value_keeps_its_old_version_in_the_history(memory: Memory) -> None:
    store = MemstrataStore(memory)
    store.put(("u",), "food", {"text": "likes sushi"})
    store.put(("u",), "food", {"text": "now vegetarian"})
    assert [v.text for v in memory.history("food", namespace="u")] == ["likes sushi"]
    assert memory.get("food", namespace="u")[0].text == "now vegetarian"


# filters -----------------------------------------------------------------------------------
FILTERS: list[dict[str, Any] | None] = [
    None,
    {"color": "red"},
    {"color": "red", "score": 3.0},
    {"score": {"$gt": 3.2}},
    {"score": {"$gte": 4.0}, "color": "green"},
    {"score": {"$lt": 4.0}},
    {"score": {"$lte": 3.5, "$gt": 3.0}},
    {"score": {"$ne": 4.5}},
    {"score": {"$eq": 4.0}},
    {"color": None},  # a key the value lacks reads as None, in both
    {"tags": ["x", "y"]},
    {"tags": ["y", "x"]},
    {"meta": {"farm": "north"}},
    {"meta": {"kg": {"$gte": 2}}},
    {"color": "nothing"},
]


@pytest.mark.parametrize("where", FILTERS, ids=lambda f: json.dumps(f))
def test_a_filter_finds_what_the_reference_finds_in_the_same_order(
    pair: tuple[BaseStore, BaseStore], where: dict[str, Any] | None
) -> None:
    for store in pair:
        for key, value in FRUIT:
            store.put(("test",), key, value)
    for page in ({}, {"limit": 2}, {"limit": 2, "offset": 2}, {"offset": 5}):
        ours, reference = both(pair, "search", ("test",), filter=where, **page)
        assert _keys(ours) == _keys(reference)
        assert all(r.score is None for r in ours)


def test_a_search_spans_the_namespaces_under_its_prefix(pair: tuple[BaseStore, BaseStore]) -> None:
    for store in pair:
        store.put(("users", "a"), "k", {"text": "alpha"})
        store.put(("users", "b"), "k", {"text": "beta"})
        store.put(("others",), "k", {"text": "gamma"})
    for prefix in ((), ("users",), ("users", "b"), ("users", "c"), ("users", "a", "x")):
        ours, reference = both(pair, "search", prefix)
        assert sorted(_keys(ours)) == sorted(_keys(reference))


# queries -----------------------------------------------------------------------------------
QUERIES = [
    ("apple", {"color": "red"}, "doc1"),
    ("car", {"color": "red"}, "doc2"),
    ("apple", {"score": {"$gte": 4.0}, "color": "green"}, "doc3"),
    ("blue car", None, "doc4"),
    ("bicycle", None, "doc5"),
    ("plum", {"meta": {"farm": "north"}}, "doc6"),
]


@pytest.mark.parametrize(("query", "where", "best"), QUERIES)
def test_a_query_ranks_every_match_with_the_reference_s_best_first(
    pair: tuple[BaseStore, BaseStore], query: str, where: dict[str, Any] | None, best: str
) -> None:
    for store in pair:
        for key, value in FRUIT:
            store.put(("test",), key, value)
    ours, reference = both(pair, "search", ("test",), query=query, filter=where)
    assert ours[0].key == reference[0].key == best
    assert ours[0].score is not None and ours[0].score > 0
    assert sorted(_keys(ours)) == sorted(_keys(reference))  # every match, as LangGraph's


def test_queries_page_and_odd_queries_still_find(pair: tuple[BaseStore, BaseStore]) -> None:
    ours, _ = pair
    for store in pair:
        for i in range(5):
            store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    first = ours.search(("test",), query="test", limit=2)
    second = ours.search(("test",), query="test", limit=2, offset=2)
    assert len(first) == len(second) == 2
    assert not {r.key for r in first} & {r.key for r in second}
    assert len(ours.search(("test",), query="test", limit=10)) == 5
    for query in ("", None, "test " * 100, "test!@#$%^&*()", "Zürich 東京"):
        ours_found, reference_found = both(pair, "search", ("test",), query=query)
        assert len(ours_found) == len(reference_found) == 5


def test_an_update_moves_an_item_in_the_ranking_and_an_unindexed_item_is_not_ranked(
    memory: Memory,
) -> None:
    store = MemstrataStore(memory)
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    before = store.search(("test",), query="Zany Xerxes")
    assert before[0].key == "doc1"
    store.put(("test",), "doc1", {"text": "new text about dogs"})
    after = {r.key: r.score for r in store.search(("test",), query="Zany Xerxes")}
    assert (after["doc1"] or 0.0) < (before[0].score or 0.0)
    assert store.search(("test",), query="new text about dogs")[0].key == "doc1"
    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    found = store.search(("test",), query="new text about dogs", limit=3)
    assert "doc4" not in [r.key for r in found]
    every = store.search(("test",), query="new text about dogs", limit=10)
    assert every[-1].key == "doc4" and every[-1].score is None  # listed after the ranked


def test_index_fields_choose_the_text_a_query_finds(memory: Memory) -> None:
    store = MemstrataStore(memory, fields=["title"])
    store.put(("lib",), "b1", {"title": "Gardening for beginners", "body": "volcanoes erupt"})
    store.put(("lib",), "b2", {"title": "Volcanoes of Iceland", "body": "tomato seedlings"})
    (episode,) = memory.get("b1", namespace="lib")
    assert episode.text == "Gardening for beginners"
    assert store.search(("lib",), query="volcanoes")[0].key == "b2"
    store.put(("lib",), "b3", {"title": "Misc", "body": "volcanoes again"}, index=["body"])
    assert memory.get("b3", namespace="lib")[0].text == "volcanoes again"


# batches -----------------------------------------------------------------------------------
def test_a_batch_reads_before_it_writes_and_its_last_write_wins(
    pair: tuple[BaseStore, BaseStore],
) -> None:
    for store in pair:
        store.put(("b",), "k0", {"text": "kept"})
    ops = [
        PutOp(("b",), "k1", {"text": "one"}),
        GetOp(("b",), "k1"),
        PutOp(("b",), "k1", {"text": "uno"}),
        SearchOp(("b",), filter={"text": "kept"}),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("b",)),)),
        PutOp(("b",), "k0", None),
    ]
    ours, reference = (store.batch(ops) for store in pair)
    assert ours[1] is None and reference[1] is None
    assert _keys(ours[3]) == _keys(reference[3])
    assert ours[4] == reference[4] == [("b",)]
    assert both(pair, "get", ("b",), "k0") == (None, None)
    got = both(pair, "get", ("b",), "k1")
    assert got[0] is not None and got[1] is not None and got[0].value == got[1].value


# bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "namespace",
    [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")],
    ids=str,
)
def test_namespaces_langgraph_refuses_are_refused_as_it_refuses_them(
    pair: tuple[BaseStore, BaseStore], namespace: tuple[str, ...]
) -> None:
    for store in pair:
        with pytest.raises(InvalidNamespaceError):
            store.put(namespace, "k", {"a": 1})


def test_a_namespace_memstrata_cannot_hold_is_langgraph_s_error(memory: Memory) -> None:
    store = MemstrataStore(memory)
    with pytest.raises(InvalidNamespaceError, match="control character"):
        store.put(("user\n1",), "k", {"a": 1})
    assert memory.namespaces() == []


def test_an_order_between_values_that_are_not_numbers_holds_for_none(memory: Memory) -> None:
    """The reference raises TypeError when an item lacks a field a `$gt` names; here such
    an item does not match, and an unknown operator is an error that names the valid."""
    store = MemstrataStore(memory)
    store.put(("t",), "a", {"score": 3})
    store.put(("t",), "b", {"score": "high"})
    store.put(("t",), "c", {"other": 1})
    assert [r.key for r in store.search(("t",), filter={"score": {"$gt": 2}})] == ["a"]
    with pytest.raises(ValueError, match=r"\$regex.*valid: \$eq"):
        store.search(("t",), filter={"score": {"$regex": "h"}})


def test_a_value_that_is_not_json_stores_nothing_of_its_batch(memory: Memory) -> None:
    store = MemstrataStore(memory)
    ops = [
        PutOp(("u",), "good", {"text": "fine"}),
        PutOp(("u",), "bad", {"when": object()}),
    ]
    with pytest.raises(InvalidInputError, match="not JSON"):
        store.batch(ops)
    with pytest.raises(InvalidInputError, match="not JSON"):
        store.put(("u",), "nan", {"x": float("nan")})
    assert memory.namespaces() == []


# clients -----------------------------------------------------------------------------------
def test_the_async_methods_over_an_async_memory(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    async def run() -> list[Any]:
        async with await AsyncMemory.open(tmp_path / "a.db", embedder=embedder) as memory:
            store = MemstrataStore(memory)
            await store.aput(("u", "1"), "k", {"text": "walks the dog at seven"})
            await store.aput(("u", "2"), "k", {"text": "swims on Mondays"})
            got = await store.aget(("u", "1"), "k")
            found = await store.asearch(("u",), query="dog walk")
            spaces = await store.alist_namespaces(prefix=("u",))
            await store.adelete(("u", "2"), "k")
            return [got, found, spaces, await store.alist_namespaces()]

    got, found, spaces, after = asyncio.run(run())
    assert got.value == {"text": "walks the dog at seven"}
    assert found[0].namespace == ("u", "1") and found[0].score is not None
    assert spaces == [("u", "1"), ("u", "2")] and after == [("u", "1")]


def test_a_sync_memory_serves_the_async_methods_too(memory: Memory) -> None:
    store = MemstrataStore(memory)

    async def run() -> Any:
        await store.aput(("u",), "k", {"text": "reads at night"})
        return await store.asearch(("u",), query="reading")

    (hit,) = asyncio.run(run())
    assert hit.key == "k" and store.get(("u",), "k") is not None


def test_a_prefix_keeps_the_graph_s_namespaces_apart(memory: Memory) -> None:
    memory.add("not the graph's", namespace="default")
    store = MemstrataStore(memory, prefix="lg:")
    store.put(("u",), "k", {"text": "the graph's"})
    assert memory.namespaces() == ["default", "lg:u"]
    assert store.list_namespaces() == [("u",)]
    assert [r.key for r in store.search(())] == ["k"]


def test_importing_memstrata_loads_no_framework() -> None:
    code = (
        "import sys, memstrata, memstrata.integrations; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'langgraph', 'langchain_core'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
