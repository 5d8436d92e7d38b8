"""Design views: how a large graph or tree is cut to a drawable size, how designs
register their views, and that the explorer itself names no design."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memstrata.designs import BUILTIN
from memstrata.engine import Registry
from memstrata.engine.contracts import Design
from memstrata.engine.views import (
    DesignView,
    View,
    ViewEdge,
    ViewNode,
    ViewQuery,
    cut_tree,
    graph,
)
from memstrata.errors import ConfigError

EXPLORER = Path(__file__).parents[2] / "src" / "memstrata" / "service" / "explorer"


def node(i: str, parent: str | None = None) -> ViewNode:
    return ViewNode(id=i, label=i, kind="thing", parent=parent)


def star(spec: DesignView, query: ViewQuery) -> View:
    """A hub joined to ten leaves, and a pair apart."""
    nodes = [node("hub"), *(node(f"l{i}") for i in range(10)), node("a"), node("b")]
    edges = [ViewEdge(source="hub", target=f"l{i}") for i in range(10)]
    edges.append(ViewEdge(source="a", target="b", invalid=True))
    return graph(spec, "tiny", nodes, edges, query)


SPEC = DesignView(name="tiny-star", title="Star", layout="graph", builder="tiny", render=star)


def test_a_graph_cut_keeps_the_best_connected_nodes_and_says_what_it_left_out() -> None:
    view = star(SPEC, ViewQuery(limit=4))
    assert [n.id for n in view.nodes][0] == "hub" and len(view.nodes) == 4
    assert view.truncated and view.total_nodes == 13 and view.total_edges == 11
    assert view.nodes[0].hidden_children == 10 - 3  # the leaves not kept
    kept = {n.id for n in view.nodes}
    assert all(e.source in kept and e.target in kept for e in view.edges)


def test_a_focus_shows_its_neighbourhood() -> None:
    view = star(SPEC, ViewQuery(limit=5, focus="a"))
    assert view.focus == "a" and [n.id for n in view.nodes] == ["a", "b"]
    assert view.edges[0].invalid and view.truncated  # the star is left out
    assert star(SPEC, ViewQuery(focus="nope")).focus is None  # an unknown focus: the top


def test_a_tree_cut_goes_level_by_level_and_counts_the_hidden_children() -> None:
    nodes = {"r": node("r")}
    for i in range(3):
        nodes[f"c{i}"] = node(f"c{i}", "r")
        for j in range(3):
            nodes[f"c{i}{j}"] = node(f"c{i}{j}", f"c{i}")
    top, cut = cut_tree(nodes, ViewQuery(depth=1))
    assert [n.id for n in top] == ["r", "c0", "c1", "c2"] and cut
    assert [n.hidden_children for n in top] == [0, 3, 3, 3]
    sub, _ = cut_tree(nodes, ViewQuery(focus="c1"))
    assert [n.id for n in sub] == ["c1", "c10", "c11", "c12"] and sub[0].parent is None
    few, _ = cut_tree(nodes, ViewQuery(limit=2))
    assert [(n.id, n.hidden_children) for n in few] == [("r", 2), ("c0", 3)]


def test_designs_register_views_by_unique_name() -> None:
    reg = Registry([Design(name="tiny", views=[SPEC])])
    assert reg.views["tiny-star"] == ("tiny", SPEC)
    with pytest.raises(ConfigError, match="view 'tiny-star' exists"):
        Registry([Design(name="tiny", views=[SPEC]), Design(name="other", views=[SPEC])])
    builtin = Registry.load().views
    assert {"mnemis-graph", "mnemis-categories", "memtree"} <= set(builtin)


def test_the_explorer_names_no_design() -> None:
    """Every design-specific picture comes from the design's package, by name."""
    names = [path.rsplit(".", 1)[-1] for path in BUILTIN]
    words = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b", re.IGNORECASE)
    for path in EXPLORER.rglob("*"):
        if path.suffix in {".py", ".js", ".html", ".css"}:
            assert not words.findall(path.read_text()), path


def test_the_explorer_never_parses_strings_as_markup() -> None:
    """Stored text reaches the page as text nodes only (the browser tests check one
    hostile episode; this keeps every script from growing an HTML sink)."""
    sinks = re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(")
    scripts = list((EXPLORER / "static").glob("*.js"))
    assert scripts
    for path in scripts:
        assert not sinks.findall(path.read_text()), path


def test_mindgraph_colours_its_concepts_by_community(tmp_path: Path, embedder) -> None:
    """With communities computed (cached per graph hash), each concept's group is its
    community's title in the partition that covers today's nodes; without them, its
    node type."""
    import asyncio

    from memstrata import AsyncMemory
    from memstrata.designs.mindgraph.records import Community
    from memstrata.designs.mindgraph.view import render

    async def run() -> None:
        mem = await AsyncMemory.open(tmp_path / "m.db", embedder=embedder, recipe="mindgraph")
        try:
            await mem.add_many(
                [
                    "Maya moved to Lisbon in 2021 and works at a bakery.",
                    "Tomas adopted a greyhound called Pepper from the shelter.",
                ]
            )
            ctx = mem.engine.context("default")
            before = render(ctx, "default", ViewQuery(limit=100))
            assert before.nodes and before.legend["colour"].startswith("node type")
            assert all(n.group == n.kind for n in before.nodes)
            ids = [n.id for n in before.nodes]
            assert len(ids) >= 3
            partition = [
                Community(
                    namespace="default", level=0, member_ids=ids[:1], title="Maya", graph="g2"
                ),
                Community(
                    namespace="default", level=1, member_ids=ids[1:], title="Rest", graph="g2"
                ),
                Community(
                    namespace="default", level=0, member_ids=ids[:2], title="Old", graph="g1"
                ),
            ]
            mem.store.put_records("default", partition, owner="mindgraph")
            after = render(ctx, "default", ViewQuery(limit=100))
            groups = {n.id: n.group for n in after.nodes}
            assert after.legend["colour"] == "community"
            assert groups[ids[0]] == "Maya"  # the partition covering today's nodes wins
            assert all(groups[i] == "Rest" for i in ids[1:])
        finally:
            await mem.close()

    asyncio.run(run())
