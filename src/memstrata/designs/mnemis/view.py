"""The explorer's views of Mnemis: the entity/fact graph (superseded facts marked) and
the category tree over the entities."""

from __future__ import annotations

from memstrata.designs.mnemis.graph import BUILDER
from memstrata.designs.mnemis.records import Category
from memstrata.engine.contracts import Context
from memstrata.engine.views import DesignView, View, ViewEdge, ViewNode, ViewQuery, graph, tree
from memstrata.models import Entity, Fact


def _entities(ctx: Context, namespace: str) -> list[Entity]:
    found = ctx.store.get_records(namespace, "entity", builder=BUILDER)
    return [e for e in found if isinstance(e, Entity)]


def _entity_node(ent: Entity, parent: str | None = None, depth: int = 0) -> ViewNode:
    return ViewNode(
        id=ent.id,
        label=ent.name,
        kind="entity",
        text=ent.summary,
        group=ent.entity_type or (ent.tags[0] if ent.tags else "entity"),
        parent=parent,
        depth=depth,
        sources=ent.sources,
        details={"aliases": ", ".join(ent.aliases), "tags": ", ".join(ent.tags)},
    )


def render_graph(ctx: Context, namespace: str, query: ViewQuery) -> View:
    nodes = [_entity_node(e) for e in _entities(ctx, namespace)]
    edges = []
    for f in ctx.store.get_records(namespace, "fact", builder=BUILDER):
        if isinstance(f, Fact):
            edges.append(
                ViewEdge(
                    source=f.subject_id,
                    target=f.object_id,
                    label=f.relation,
                    text=f.fact,
                    invalid=f.invalid_at is not None,
                    sources=f.sources,
                )
            )
    legend = {"valid": "a fact in force", "invalid": "a superseded fact, kept for history"}
    return graph(GRAPH, BUILDER, nodes, edges, query, legend)


def render_categories(ctx: Context, namespace: str, query: ViewQuery) -> View:
    cats = [
        c
        for c in ctx.store.get_records(namespace, "category", builder=BUILDER)
        if isinstance(c, Category)
    ]
    top = max((c.layer for c in cats), default=0)
    placed: dict[str, str] = {}  # child -> the first category that lists it
    for cat in sorted(cats, key=lambda c: -c.layer):
        for child in cat.child_ids:
            placed.setdefault(child, cat.id)
    nodes = [
        ViewNode(
            id=c.id,
            label=c.name,
            kind="category",
            text=c.summary or ", ".join(c.tags),
            group=f"layer {c.layer}",
            parent=placed.get(c.id),
            depth=top - c.layer,
            sources=c.sources,
            details={"layer": str(c.layer), "children": str(len(c.child_ids))},
        )
        for c in cats
    ]
    nodes += [
        _entity_node(e, placed[e.id], top) for e in _entities(ctx, namespace) if e.id in placed
    ]
    return tree(CATEGORIES, BUILDER, nodes, query)


GRAPH = DesignView(
    name="mnemis-graph",
    title="Mnemis entities and facts",
    layout="graph",
    builder=BUILDER,
    render=render_graph,
    description="Entities as nodes, facts as edges; superseded facts drawn dashed.",
)
CATEGORIES = DesignView(
    name="mnemis-categories",
    title="Mnemis category hierarchy",
    layout="tree",
    builder=BUILDER,
    render=render_categories,
    description="Categories layer by layer down to the entities they group.",
)
VIEWS = [GRAPH, CATEGORIES]
