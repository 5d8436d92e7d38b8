"""``memstrata show NAME`` for MindGraph: a node of the namespace's graph (by its label,
or an entity by name, however cased or typed) with its edges."""

from __future__ import annotations

from memstrata import nlp
from memstrata.designs.mindgraph.graph import BUILDER, snake
from memstrata.designs.mindgraph.records import ConceptEdge, ConceptNode
from memstrata.engine.contracts import Context, ShowNode

WIDTH = 100


def show(ctx: Context, namespace: str, name: str) -> list[ShowNode] | None:
    nodes = {
        r.id: r
        for r in ctx.store.get_records(namespace, "concept_node", builder=BUILDER)
        if isinstance(r, ConceptNode) and r.graph == ""
    }
    wanted = name.strip()
    key = nlp.name_key(wanted)  # a name however it is cased or typed ("Zürich")
    found = [
        n
        for n in nodes.values()
        if n.label in (wanted, snake(wanted))
        or (n.node_type == "entity" and nlp.name_key(n.label) == key)
    ]
    if not found:
        return None
    out = []
    edges = [
        e
        for e in ctx.store.get_records(namespace, "concept_edge", builder=BUILDER)
        if isinstance(e, ConceptEdge)
    ]
    for node in found:
        kids = []
        for e in edges:
            if e.source_id == node.id and e.target_id in nodes:
                other = nodes[e.target_id]
                kids.append(
                    ShowNode(text=f"-{e.relation}-> {other.label}: {other.description[:WIDTH]}")
                )
            elif e.target_id == node.id and e.source_id in nodes:
                other = nodes[e.source_id]
                kids.append(
                    ShowNode(text=f"<-{e.relation}- {other.label}: {other.description[:WIDTH]}")
                )
        head = (
            f"{node.node_type} {node.label}: {node.description[:WIDTH]} ({len(node.sources)} spans)"
        )
        out.append(ShowNode(text=head, children=kids))
    return out
