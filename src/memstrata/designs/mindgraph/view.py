"""The explorer's view of MindGraph: the namespace's concept graph, nodes coloured by
their community (by type while no communities are computed), each with its quote spans."""

from __future__ import annotations

from memstrata.designs.mindgraph.graph import BUILDER
from memstrata.engine.contracts import Context
from memstrata.engine.views import DesignView, View, ViewEdge, ViewNode, ViewQuery, graph
from memstrata.models import Community, ConceptEdge, ConceptNode


def render(ctx: Context, namespace: str, query: ViewQuery) -> View:
    records = ctx.store.get_records
    communities = [
        c for c in records(namespace, "community", builder=BUILDER) if isinstance(c, Community)
    ]
    member_of: dict[str, str] = {}
    for c in sorted(communities, key=lambda c: -c.level):  # the finest level wins
        for m in c.member_ids:
            member_of[m] = c.title or f"community {c.id[:8]}"
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
        for n in records(namespace, "concept_node", builder=BUILDER)
        if isinstance(n, ConceptNode) and n.graph == ""
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
    legend = {"colour": "community" if communities else "node type (no communities yet)"}
    return graph(GRAPH, BUILDER, nodes, edges, query, legend)


GRAPH = DesignView(
    name="mindgraph",
    title="MindGraph concepts",
    layout="graph",
    builder=BUILDER,
    render=render,
    description="Concepts and their typed relations, coloured by community.",
)
VIEWS = [GRAPH]
