"""The explorer's view of MindGraph: the namespace's concept graph, nodes coloured by
their community (by type while no communities are computed), each with its quote spans.

Communities are a flat partition (Leiden subgraphs of at most 10 nodes, ``level`` is the
subgraph's number), cached per graph hash: a changed graph leaves the reports of the old
one behind, so the view takes the partition that covers most of today's nodes."""

from __future__ import annotations

from memstrata.designs.mindgraph.graph import BUILDER
from memstrata.designs.mindgraph.records import Community, ConceptEdge, ConceptNode
from memstrata.engine.contracts import Context
from memstrata.engine.views import DesignView, View, ViewEdge, ViewNode, ViewQuery, graph


def render(ctx: Context, namespace: str, query: ViewQuery) -> View:
    records = ctx.store.get_records
    concepts = [
        n
        for n in records(namespace, "concept_node", builder=BUILDER)
        if isinstance(n, ConceptNode) and n.graph == ""
    ]
    member_of = _partition(
        [c for c in records(namespace, "community", builder=BUILDER) if isinstance(c, Community)],
        {n.id for n in concepts},
    )
    nodes = [
        ViewNode(
            id=n.id,
            label=n.label,
            kind=n.node_type,
            text=n.description,
            group=member_of.get(n.id, n.node_type),
            sources=n.sources,
            details={"type": n.node_type, "community": member_of.get(n.id, "")},
        )
        for n in concepts
    ]
    edges = [
        ViewEdge(
            source=e.source_id,
            target=e.target_id,
            label=e.relation,
            text=e.relation,
            sources=e.sources,
        )
        for e in records(namespace, "concept_edge", builder=BUILDER)
        if isinstance(e, ConceptEdge) and e.graph == ""
    ]
    legend = {"colour": "community" if member_of else "node type (no communities yet)"}
    return graph(GRAPH, BUILDER, nodes, edges, query, legend)


def _partition(communities: list[Community], current: set[str]) -> dict[str, str]:
    """Node id -> community title, from the cached partition (one per graph hash) that
    holds most of the current nodes; empty when none does."""
    by_graph: dict[str, list[Community]] = {}
    for c in communities:
        by_graph.setdefault(c.graph, []).append(c)
    best = max(
        by_graph.values(),
        key=lambda cs: sum(len(current.intersection(c.member_ids)) for c in cs),
        default=[],
    )
    return {
        m: c.title or f"community {c.level + 1}" for c in best for m in c.member_ids if m in current
    }


GRAPH = DesignView(
    name="mindgraph",
    title="MindGraph concepts",
    layout="graph",
    builder=BUILDER,
    render=render,
    description="Concepts and their typed relations, coloured by community.",
)
VIEWS = [GRAPH]
