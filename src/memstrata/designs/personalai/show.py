"""``memstrata show NAME`` for PersonalAI: an object node (by name or id) with its
triplets, theses and episodes; superseded items are listed with what replaced them."""

from __future__ import annotations

from memstrata.designs.personalai.builder import graph_cache
from memstrata.designs.personalai.graph import name_key
from memstrata.engine.contracts import Context, ShowNode

WIDTH = 100


def show(ctx: Context, namespace: str, name: str) -> list[ShowNode] | None:
    graph = graph_cache(ctx).get(namespace)
    oid = name if name in graph.objects else graph.by_name.get(name_key(name))
    if oid is None:
        return None
    ent = graph.objects[oid]
    triplets, theses = [], []
    for fid in sorted(graph.triplets_of.get(oid, ())):
        f = graph.triplets[fid]
        gone = f" (replaced by {', '.join(f.replaced_by)})" if f.invalid_at else ""
        triplets.append(ShowNode(text=f"{fid}: {f.fact}{gone}"[:WIDTH]))
    for tid in sorted(graph.theses_of.get(oid, ())):
        t = graph.theses[tid]
        gone = f" (replaced by {', '.join(t.replaced_by)})" if t.invalid_at else ""
        theses.append(ShowNode(text=f"{tid}: {t.text}{gone}"[:WIDTH]))
    episodes = [ShowNode(text=e) for e in graph.episodes_of(oid)]
    return [
        ShowNode(
            text=f"object {ent.name} ({oid})",
            children=[
                ShowNode(text=f"triplets ({len(triplets)})", children=triplets),
                ShowNode(text=f"theses ({len(theses)})", children=theses),
                ShowNode(text=f"episodes ({len(episodes)})", children=episodes),
            ],
        )
    ]
