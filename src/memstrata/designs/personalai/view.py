"""The explorer's view of PersonalAI: object nodes, triplets (simple relations) as
edges and theses as nodes joined to the objects they state something about; outdated
triplets and theses are marked."""

from __future__ import annotations

from memstrata.designs.personalai.graph import BUILDER
from memstrata.designs.personalai.records import Thesis
from memstrata.engine.contracts import Context
from memstrata.engine.views import DesignView, View, ViewEdge, ViewNode, ViewQuery, graph, short
from memstrata.models import Entity, Fact


def render(ctx: Context, namespace: str, query: ViewQuery) -> View:
    records = ctx.store.get_records
    nodes = [
        ViewNode(
            id=e.id,
            label=e.name,
            kind="object",
            text=e.summary,
            group="object",
            sources=e.sources,
            details={"type": e.entity_type or ""},
        )
        for e in records(namespace, "entity", builder=BUILDER)
        if isinstance(e, Entity)
    ]
    edges = [
        ViewEdge(
            source=f.subject_id,
            target=f.object_id,
            label=f.relation,
            text=f.fact,
            invalid=f.invalid_at is not None,
            sources=f.sources,
        )
        for f in records(namespace, "fact", builder=BUILDER)
        if isinstance(f, Fact)
    ]
    for t in records(namespace, "thesis", builder=BUILDER):
        if not isinstance(t, Thesis):
            continue
        invalid = t.invalid_at is not None
        nodes.append(
            ViewNode(
                id=t.id,
                label=short(t.text, 40),
                kind="thesis",
                text=t.text,
                group="thesis",
                invalid=invalid,
                sources=t.sources,
            )
        )
        edges += [
            ViewEdge(source=t.id, target=e, label="about", invalid=invalid) for e in t.entity_ids
        ]
    legend = {"invalid": "outdated knowledge, kept for history"}
    return graph(GRAPH, BUILDER, nodes, edges, query, legend)


GRAPH = DesignView(
    name="personalai",
    title="PersonalAI objects, triplets and theses",
    layout="graph",
    builder=BUILDER,
    render=render,
    description="Objects joined by triplets; theses joined to the objects they are about.",
)
VIEWS = [GRAPH]
