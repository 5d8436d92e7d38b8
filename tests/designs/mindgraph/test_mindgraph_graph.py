"""The concept graph's four operations with their validation, and provenance: exact,
normalised and fuzzy location of quotes, and the unlocatable quote."""

from __future__ import annotations

import pytest
from mindgraph_helpers import DOC

from memstrata.designs.mindgraph.graph import ConceptGraph
from memstrata.designs.mindgraph.heuristic import parse, question_graph
from memstrata.designs.mindgraph.provenance import locate, normalise, window


def node(nid: str, src: str, typ: str = "entity", content: str | None = None) -> dict:
    return {"op": "add_node", "id": nid, "type": typ, "content": content or nid, "src": src}


def test_add_node_locates_its_quote_exactly() -> None:
    g = ConceptGraph()
    assert g.apply(node("maya", "Maya Chen"), DOC, 0)
    n = g.nodes["maya"]
    assert DOC[n.start : n.end] == "Maya Chen" and n.chunk == 0
    assert g.provenance == {"exact": 1}


def test_add_node_rejections_are_counted_by_reason() -> None:
    g = ConceptGraph()
    g.apply(node("maya", "Maya Chen"), DOC, 0)
    assert not g.apply(node("maya", "Lisbon"), DOC, 0)  # duplicate id
    assert not g.apply(node("", "Lisbon"), DOC, 0)
    assert not g.apply(node("x", "Lisbon", typ="person"), DOC, 0)
    assert not g.apply({"op": "add_node", "id": "y", "type": "claim", "content": " "}, DOC, 0)
    assert not g.apply({"op": "merge_nodes", "id": "maya"}, DOC, 0)
    assert g.rejected == {
        "duplicate_id": 1,
        "missing_id": 1,
        "unknown_type": 1,
        "empty_content": 1,
        "unknown_op": 1,
    }
    assert list(g.nodes) == ["maya"] and g.nodes["maya"].content == "maya"


def test_edges_need_both_ends_and_keep_their_own_span() -> None:
    g = ConceptGraph()
    g.apply(node("maya", "Maya Chen"), DOC, 0)
    g.apply(node("lisbon", "Lisbon"), DOC, 0)
    edge = {
        "op": "add_edge",
        "source": "maya",
        "target": "lisbon",
        "relation": "moved_to",
        "src": "moved to Lisbon",
    }
    assert g.apply(edge, DOC, 0)
    e = g.edges[0]
    assert DOC[e.start : e.end] == "moved to Lisbon"
    assert not g.apply({**edge, "target": "porto"}, DOC, 0)  # dangling
    assert not g.apply({**edge, "source": "nobody"}, DOC, 0)  # dangling
    assert not g.apply(edge, DOC, 0)  # the same edge twice
    assert not g.apply({**edge, "relation": ""}, DOC, 0)
    assert not g.apply({**edge, "target": "maya"}, DOC, 0)
    assert g.rejected == {
        "dangling_edge": 2,
        "duplicate_edge": 1,
        "empty_relation": 1,
        "self_loop": 1,
    }
    assert len(g.edges) == 1


def test_edit_node_refines_content_and_span() -> None:
    g = ConceptGraph()
    g.apply(node("marlin", "drone Marlin", typ="entity"), DOC, 0)
    old = (g.nodes["marlin"].start, g.nodes["marlin"].end)
    assert g.apply({"op": "edit_node", "id": "marlin", "content": "underwater drone"}, DOC, 1)
    assert g.nodes["marlin"].content == "underwater drone"
    assert (g.nodes["marlin"].start, g.nodes["marlin"].end) == old  # no quote: span kept
    assert g.apply(
        {
            "op": "edit_node",
            "id": "marlin",
            "content": "dives 300 m",
            "type": "stat",
            "src": "dive to 300 meters",
        },
        DOC,
        1,
    )
    n = g.nodes["marlin"]
    assert n.type == "stat" and DOC[n.start : n.end] == "dive to 300 meters"
    assert not g.apply({"op": "edit_node", "id": "ghost", "content": "x"}, DOC, 1)
    assert not g.apply({"op": "edit_node", "id": "marlin", "content": ""}, DOC, 1)
    assert g.rejected == {"unknown_id": 1, "empty_content": 1}


def test_delete_node_takes_its_edges() -> None:
    g = ConceptGraph()
    for nid, src in [("maya", "Maya Chen"), ("leo", "Leo"), ("toronto", "Toronto")]:
        g.apply(node(nid, src), DOC, 0)
    for s, t in [("maya", "leo"), ("leo", "toronto")]:
        g.apply({"op": "add_edge", "source": s, "target": t, "relation": "r", "src": "Leo"}, DOC, 0)
    assert g.apply({"op": "delete_node", "id": "leo"}, DOC, 0)
    assert set(g.nodes) == {"maya", "toronto"} and g.edges == []
    assert not g.apply({"op": "delete_node", "id": "leo"}, DOC, 0)
    assert g.rejected == {"unknown_id": 1}
    assert g.applied == {"add_node": 3, "add_edge": 2, "delete_node": 1}


def test_quote_location_falls_back_in_order() -> None:
    text = "He said: “The  Marlin\n dive went well” — and left.\nMore text follows here."
    exact = locate("dive went well", text)
    assert exact is not None and exact.method == "exact"
    norm = locate('"the marlin dive went WELL"', text)
    assert norm is not None and norm.method == "normalised"
    assert text[norm.start : norm.end] == "“The  Marlin\n dive went well”"
    fuzzy = locate("The Marlin dives went well - and left", text)
    assert fuzzy is not None and fuzzy.method == "fuzzy" and fuzzy.score >= 85
    assert "Marlin" in text[fuzzy.start : fuzzy.end]
    assert locate("a quote that is nowhere in the text at all", text) is None
    assert locate("", text) is None


def test_quotes_are_located_inside_their_chunk_only() -> None:
    text = "Leo lives in Toronto. " * 3
    found = locate("Toronto", text, 30, 60)
    assert found is not None and 30 <= found.start < found.end <= 60
    assert locate("Toronto", text, 0, 10) is None


def test_an_unlocatable_quote_is_counted_and_gets_no_span() -> None:
    g = ConceptGraph()
    assert g.apply(node("ghost", "this sentence was never written anywhere"), DOC, 0)
    assert g.nodes["ghost"].start is None and g.nodes["ghost"].end is None
    assert g.provenance == {"unlocated": 1}
    # where a span is required (the memory mode's records), the node is refused instead
    assert not g.apply(
        node("ghost2", "never written either, not at all"), DOC, 0, require_span=True
    )
    assert g.rejected == {"no_span": 1} and g.provenance["unlocated"] == 2


def test_normalise_maps_back_to_the_original_offsets() -> None:
    text = "A  “Big”\tDeal"
    norm, where = normalise(text)
    assert norm == 'a "big" deal'
    assert [text[where[i]] for i in (0, 2, 3)] == ["A", "“", "B"]


@pytest.mark.parametrize("size", [100, 400])
def test_window_is_centred_and_holds_the_span(size: int) -> None:
    text = "\n".join(f"line {i} " + "x" * 40 for i in range(100))
    start = text.index("line 50")
    lo, hi = window(text, start, start + 7, size)
    assert lo <= start and start + 7 <= hi
    assert size * 0.5 <= hi - lo <= size + 400
    assert lo == 0 or text[lo - 1] == "\n"


def test_digest_changes_with_the_structure_only() -> None:
    g = ConceptGraph()
    g.apply(node("maya", "Maya Chen"), DOC, 0)
    h = g.digest()
    g.rejected["x"] += 1
    assert g.digest() == h
    g.apply({"op": "edit_node", "id": "maya", "content": "engineer"}, DOC, 0)
    assert g.digest() != h
    assert ConceptGraph.from_dict(g.to_dict()).digest() == g.digest()


def test_the_heuristic_parse_reads_a_date_and_its_time_as_one_value() -> None:
    """``[2023-07-15 13:51]`` is one stat, not four (2023, 07, 15, 13:51): a turn's
    timestamp would otherwise bring four nodes to every claim of a chat. A value ends
    with a digit or its unit, not with the sentence's punctuation."""
    text = "[2023-07-15 13:51] Maya: The drone dove 300 km on 2021-03-02 and cost $45,000."
    (sentence,) = parse(text)
    assert [v for v, _, _ in sentence.numbers] == [
        "2023-07-15 13:51",
        "300 km",
        "2021-03-02",
        "$45,000",
    ]
    assert all(text[a:b] == v for v, a, b in sentence.numbers)
    graph = question_graph(text, "How deep did the drone dive?", [(0, len(text))])
    assert sorted(n for n in graph.nodes if n.startswith("stat_")) == [
        "stat_2021_03_02",
        "stat_2023_07_15_13_51",
        "stat_300_km",
        "stat_45_000",
    ]
