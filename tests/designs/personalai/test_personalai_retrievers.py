"""The four retrievers on small hand-made graphs with a known answer, option by option."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from pai_helpers import make_graph, node, query, set_vectors
from pydantic import ValidationError

from memstrata.designs.personalai.astar import AStarParams, astar, search
from memstrata.designs.personalai.beam_search import (
    BeamSearchParams,
    Path,
    beam_paths,
    beam_search,
    select,
)
from memstrata.designs.personalai.retrieve import (
    ComparatorParams,
    Query,
    banned_types,
    compare,
    containing,
    mixed,
    name_parts,
)
from memstrata.designs.personalai.watercircles import (
    WaterCirclesParams,
    prune,
    watercircles,
)

HEURISTICS = ["ip", "weighted_shortest_path", "averaged_weighted_shortest_path"]


@pytest.fixture
def ladder(store, embedder):
    """A-B-C-D (3 hops) and a detour A-P1-...-P5-D (6 hops)."""
    detour = [f"P{i}" for i in range(1, 6)]
    chain = ["A", "B", "C", "D"]
    triplets = [(a, "to", b) for a, b in itertools.pairwise(chain)]
    triplets += [(a, "via", b) for a, b in itertools.pairwise(["A", *detour, "D"])]
    return make_graph(store, embedder, chain + detour, triplets)


def _admissible(graph, target: str) -> None:
    """Every node at cosine >= 0.2 to the target: each heuristic's d <= 0.8 < 1 per hop,
    so none overestimates and A* must return a shortest path."""
    topo = graph.topology()
    t = node(topo, graph, target)
    dim = topo.vectors().shape[1]
    rng = np.random.default_rng(0)
    base = np.zeros(dim, dtype=np.float32)
    base[0] = 1.0
    rows = {}
    for i in range(len(topo)):
        noise = rng.normal(size=dim).astype(np.float32)
        noise[0] = 0
        noise /= np.linalg.norm(noise)
        rows[i] = base if i == t else base * 0.5 + noise * 0.8
    set_vectors(topo, rows)


@pytest.mark.parametrize("h", HEURISTICS)
def test_astar_each_heuristic_finds_the_shortest_path(ladder, h) -> None:
    _admissible(ladder, "D")
    q = query(ladder, ["A", "D"])
    path = search(q, q.starts[0], q.starts[1], AStarParams(h_metric_name=h))
    assert path is not None
    facts = [ladder.triplets[it.rid].fact for _, it in path]
    assert facts == ["A to B", "B to C", "C to D"]
    items = astar(q, AStarParams(h_metric_name=h))
    assert [it.path[-1] for it in items][-1] == f"o:{ladder.by_name['d']}"
    assert {ladder.triplets[it.rid].fact for it in items} == set(facts)


def test_astar_limits_depth_and_passed_nodes(ladder) -> None:
    q = query(ladder, ["A", "D"])
    assert search(q, q.starts[0], q.starts[1], AStarParams(max_depth=2)) is None
    assert search(q, q.starts[0], q.starts[1], AStarParams(max_passed_nodes=2)) is None
    assert search(q, q.starts[0], q.starts[1], AStarParams(max_depth=3)) is not None


def test_astar_heuristic_guides_search_within_a_small_budget(store, embedder) -> None:
    """From A, ten dead ends and one way to T; the ip heuristic walks to T in few
    expansions because only that way looks like T."""
    leaves = [f"L{i}" for i in range(10)]
    graph = make_graph(
        store,
        embedder,
        ["A", "W", "T", *leaves],
        [("A", "to", "W"), ("W", "to", "T")] + [("A", "to", x) for x in leaves],
    )
    topo = graph.topology()
    dim = topo.vectors().shape[1]
    far, near = np.zeros(dim, np.float32), np.zeros(dim, np.float32)
    far[0], near[0] = -1.0, 1.0  # d(far, T) = 2, d(near, T) = 0
    rows = {i: far for i in range(len(topo))}
    rows[node(topo, graph, "W")] = near
    rows[node(topo, graph, "T")] = near
    set_vectors(topo, rows)
    q = query(graph, ["A", "T"])
    assert search(q, q.starts[0], q.starts[1], AStarParams(max_passed_nodes=3)) is not None


def test_astar_one_start_returns_its_neighbourhood(ladder) -> None:
    q = query(ladder, ["B"])
    facts = {ladder.triplets[it.rid].fact for it in astar(q, AStarParams())}
    assert facts == {"A to B", "B to C"}


@pytest.fixture
def star(store, embedder):
    """Query entities A, B, C; thesis T2 links A and B, T1 only A and D; episode e1
    mentions A, B and C, e2 only A; A-X-B is a chain through X."""
    return make_graph(
        store,
        embedder,
        ["A", "B", "C", "D", "X"],
        [("A", "knows", "X"), ("X", "knows", "B"), ("C", "likes", "D")],
        [("A meets D", ["A", "D"]), ("A meets B", ["A", "B"])],
        {"e1": ["A", "B", "C"], "e2": ["A"]},
    )


def test_watercircles_ranks_fragments_by_intersections(star) -> None:
    q = query(star, ["A", "B", "C"])
    items = watercircles(q, WaterCirclesParams(strict_filter=False))
    theses = [star.theses[it.rid].text for it in items if it.kind == "hyper"]
    assert theses.index("A meets B") < theses.index("A meets D")
    episodes = [it.rid for it in items if it.kind == "episodic"]
    assert episodes.index("e1") < episodes.index("e2")
    strict = watercircles(query(star, ["A", "B", "C"]), WaterCirclesParams())
    assert "A meets D" not in {star.theses[i.rid].text for i in strict if i.kind == "hyper"}
    assert "e2" not in {i.rid for i in strict if i.kind == "episodic"}


def test_watercircles_counts_query_entities_named_in_a_fragments_text(store, embedder) -> None:
    """N_intersections reads the text: a thesis linked to A alone that names B counts
    one, and strict filtering keeps it; one that names no other query entity counts
    none and is filtered out."""
    g = make_graph(
        store,
        embedder,
        ["A", "B", "Q"],
        [],
        [("A called B yesterday", ["A"]), ("a quiet day", ["A", "Q"])],
    )
    strict = watercircles(query(g, ["A", "B"]), WaterCirclesParams())
    assert {g.theses[i.rid].text for i in strict if i.kind == "hyper"} == {"A called B yesterday"}


def test_watercircles_intersections_are_primary(star) -> None:
    q = query(star, ["A", "B"])
    items = watercircles(q, WaterCirclesParams(chain_triplets_num=2, other_triplets_num=0))
    simple = [star.triplets[it.rid].fact for it in items if it.kind == "simple"]
    assert simple == ["A knows X", "X knows B"]
    items = watercircles(q, WaterCirclesParams(hyper_num=0, episodic_num=0, chain_triplets_num=0))
    assert all(it.kind == "simple" for it in items) and len(items) <= 6


def test_watercircles_text_pruning() -> None:
    text = "Ada wrote code. Bob cooked. Ada met Cy."
    assert prune(text, ["Ada"]) == "Ada wrote code. Ada met Cy."
    assert prune(text, ["Zed"]) == text


@pytest.fixture
def web(store, embedder):
    """A start S with branches that meet again, so paths could share nodes and edges."""
    names = ["S", "A", "B", "C", "D", "E", "F"]
    triplets = [
        ("S", "r", "A"),
        ("S", "r", "B"),
        ("A", "r", "C"),
        ("B", "r", "C"),
        ("C", "r", "D"),
        ("A", "r", "D"),
        ("D", "r", "E"),
        ("B", "r", "E"),
        ("E", "r", "F"),
        ("C", "r", "F"),
        ("A", "r", "B"),
    ]
    return make_graph(store, embedder, names, triplets)


def _paths(graph, **kw) -> list[Path]:
    q = query(graph, ["S"], vector=graph.topology().vectors()[node(graph.topology(), graph, "F")])
    return beam_paths(q, BeamSearchParams(**kw))


def test_beam_without_node_sharing_never_shares_a_node(web) -> None:
    paths = _paths(web, max_paths=4)
    assert len(paths) >= 2
    for a, b in itertools.combinations(paths, 2):
        assert not (set(a.nodes[1:]) & set(b.nodes[1:]))
    for p in paths:
        assert len(p.nodes) == len(set(p.nodes))  # same_path_intersection_by_node off


def test_beam_without_relation_sharing_never_shares_an_edge(web) -> None:
    paths = _paths(web, max_paths=4, diff_paths_intersection_by_node=True)
    for a, b in itertools.combinations(paths, 2):
        assert not ({e for e, _, _ in a.edges} & {e for e, _, _ in b.edges})


def test_beam_sharing_on_allows_shared_nodes_and_revisits(web) -> None:
    shared = _paths(
        web,
        max_paths=10,
        max_depth=4,
        diff_paths_intersection_by_node=True,
        diff_paths_intersection_by_rel=True,
        same_path_intersection_by_node=True,
    )
    nodes = [n for p in shared for n in p.nodes[1:]]
    assert len(nodes) > len(set(nodes))


def test_beam_final_sorting_modes() -> None:
    ended = [Path([0, 1], sims=[0.9], score=0.9), Path([0, 2], sims=[0.2], score=0.2)]
    cont = [Path([0, 3], sims=[0.5], score=0.5), Path([0, 4], sims=[0.8], score=0.8)]
    pick = {
        m: [
            p.score
            for p in select(ended, cont, BeamSearchParams(max_paths=3, final_sorting_mode=m))
        ]
        for m in ("ended_first", "continuous_first", "mixed")
    }
    assert pick["ended_first"] == [0.9, 0.2, 0.8]
    assert pick["continuous_first"] == [0.8, 0.5, 0.9]
    assert pick["mixed"] == [0.9, 0.8, 0.5]


def test_beam_mean_alpha_weighs_the_last_node(web) -> None:
    from memstrata.designs.personalai.beam_search import relevance

    assert relevance([1.0, 0.0], 1.0) == pytest.approx(0.5)
    assert relevance([1.0, 0.0], 0.0) == pytest.approx(0.0)
    assert relevance([1.0, 0.0], 0.75) == pytest.approx(0.375)
    items = beam_search(query(web, ["S"]), BeamSearchParams(max_depth=2))
    assert items and all(it.path[0] == f"o:{web.by_name['s']}" for it in items)


@pytest.mark.parametrize("restrict", ["E", "T", "O", "ET", "EO", "TO"])
def test_restrictions_never_visit_their_node_type(star, restrict) -> None:
    banned = banned_types(restrict)
    runs = [
        lambda q: astar(q, AStarParams()),
        lambda q: watercircles(q, WaterCirclesParams(strict_filter=False)),
        lambda q: beam_search(q, BeamSearchParams()),
    ]
    for run in runs:
        base = query(star, ["A", "B", "C"])
        q = Query(base.text, base.vector, base.starts, base.topo, banned)
        run(q)
        entered = q.visited - set(q.starts)
        assert not any(q.topo.types[n] in banned for n in entered)
        free = query(star, ["A", "B", "C"])
        run(free)
        assert any(free.topo.types[n] in banned for n in free.visited - set(free.starts))


def test_restriction_letters_are_checked() -> None:
    with pytest.raises(ValidationError, match="E, T and O"):
        BeamSearchParams(restrict="EX")
    assert BeamSearchParams(restrict="te").restrict == "TE"


def test_mixed_is_the_union(star) -> None:
    def one(q):
        return astar(q, AStarParams())

    def two(q):
        return watercircles(q, WaterCirclesParams(strict_filter=False))

    q = query(star, ["A", "B"])
    a = {(i.kind, i.rid) for i in one(q)}
    w = {(i.kind, i.rid) for i in two(q)}
    both = mixed([one, two], q)
    assert {(i.kind, i.rid) for i in both} == a | w
    assert len(both) == len(a | w)


def test_comparator_matches_by_name_then_embedding(star) -> None:
    topo = star.topology()
    starts = compare(star, topo, ["b", "the A"], ComparatorParams(top=0))
    assert starts == [node(topo, star, "B"), node(topo, star, "A")]
    assert compare(star, topo, ["nothing like it"], ComparatorParams(threshold=0.99)) == []


def test_comparator_matches_the_names_a_conjunction_joins(store, embedder) -> None:
    g = make_graph(store, embedder, ["Iain Banks", "Irwin Shaw", "Tom and Jerry"])
    topo = g.topology()
    assert name_parts("Iain Banks and Irwin Shaw") == ["Iain Banks", "Irwin Shaw"]
    assert name_parts("Procter & Gamble") == ["Procter", "Gamble"]
    assert name_parts("Irwin Shaw") == []
    no_embedding = ComparatorParams(top=0)
    assert compare(g, topo, ["Iain Banks and Irwin Shaw"], no_embedding) == [
        node(topo, g, "Iain Banks"),
        node(topo, g, "Irwin Shaw"),
    ]
    # a name of its own that holds a conjunction is matched as itself
    assert compare(g, topo, ["Tom and Jerry"], no_embedding) == [node(topo, g, "Tom and Jerry")]


def test_comparator_matches_a_multiword_name_inside_longer_names(store, embedder) -> None:
    g = make_graph(
        store,
        embedder,
        ['Richard Elmer "Dick" Humbert', "Dick Humbert Stadium and Park", "Dick Smith", "Humbert"],
    )
    topo = g.topology()
    assert [g.objects[o].name for o in containing(g, "Dick Humbert", 5)] == [
        'Richard Elmer "Dick" Humbert',
        "Dick Humbert Stadium and Park",
    ]
    assert [g.objects[o].name for o in containing(g, "Dick Humbert", 1)] == [
        'Richard Elmer "Dick" Humbert'
    ]
    # one word is left to the embedding match; an exact name needs no containing one
    assert containing(g, "Dick", 5) == []
    params = ComparatorParams(top=1, threshold=1.0)
    assert compare(g, topo, ["Dick Humbert"], params) == [
        node(topo, g, 'Richard Elmer "Dick" Humbert')
    ]
    assert compare(g, topo, ["Humbert"], params) == [node(topo, g, "Humbert")]


@pytest.fixture
def two_starts(store, embedder):
    """Starts A and B joined through X; each start also has four leaves of its own."""
    names = ["A", "B", "X", *[f"a{i}" for i in range(4)], *[f"b{i}" for i in range(4)]]
    triplets = [("A", "meets", "X"), ("X", "knows", "B")]
    triplets += [("A", "has", f"a{i}") for i in range(4)]
    triplets += [("B", "has", f"b{i}") for i in range(4)]
    return make_graph(store, embedder, names, triplets)


def test_beam_paths_may_enter_another_start_node(two_starts) -> None:
    g = two_starts
    q = query(g, ["A", "B"], vector=g.topology().vectors()[node(g.topology(), g, "B")])
    paths = beam_paths(q, BeamSearchParams(max_paths=10, max_depth=3))
    name = {q.topo.index[f"o:{oid}"]: key for key, oid in g.by_name.items()}
    named = {tuple(name.get(n, "?") for n in p.nodes) for p in paths}
    assert ("a", "x", "b") in {p[:3] for p in named}, named  # A-X-B: "X knows B"


def test_beam_caps_paths_per_start_node_and_ignores_their_order(two_starts) -> None:
    g = two_starts
    vec = g.topology().vectors()[node(g.topology(), g, "X")]
    runs = [
        beam_paths(query(g, starts, vector=vec), BeamSearchParams(max_paths=2))
        for starts in (["A", "B"], ["B", "A"])
    ]
    assert [p.nodes for p in runs[0]] == [p.nodes for p in runs[1]]  # order-free
    by_start: dict[int, int] = {}
    for p in runs[0]:
        by_start[p.nodes[0]] = by_start.get(p.nodes[0], 0) + 1
    assert sorted(by_start.values()) == [2, 2]  # max_paths = 2 from each start
