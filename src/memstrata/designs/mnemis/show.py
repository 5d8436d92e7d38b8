"""``memstrata show NAME`` for Mnemis: a category subtree, or an entity with its facts."""

from __future__ import annotations

from memstrata.designs.mnemis.builder import graph_cache
from memstrata.designs.mnemis.graph import Graph
from memstrata.engine.contracts import Context, ShowNode
from memstrata.nlp import fold
from memstrata.wording import plural

DEPTH = 2


def show(ctx: Context, namespace: str, name: str) -> list[ShowNode] | None:
    graph, _ = graph_cache(ctx).get(namespace)
    want = fold(name.strip())  # NFC and case-folded: "Zürich" however it was typed
    cats = [c for c in graph.categories.values() if fold(c.name) == want]
    if cats:
        return [
            ShowNode(
                text=f"{cat.name} (layer {cat.layer})",
                children=_subtree(graph, cat.child_ids, DEPTH),
            )
            for cat in sorted(cats, key=lambda c: -c.layer)
        ]
    ents = [
        e
        for e in graph.entities.values()
        if fold(e.name) == want or want in (fold(a) for a in e.aliases)
    ]
    if not ents:
        return None
    out = []
    for ent in ents:
        eps = graph.episode_ids(ent.id)
        lines = [ShowNode(text=ent.summary)] if ent.summary else []
        seen = f"appears in {plural(len(eps), 'episode')}: {', '.join(eps[:20])}"
        lines.append(ShowNode(text=seen))
        facts = sorted(graph.facts_of.get(ent.id, ()), key=lambda f: graph.facts[f].fact)
        for fid in facts[:30]:
            f = graph.facts[fid]
            ended = f" (invalid since {f.invalid_at:%Y-%m-%d})" if f.invalid_at else ""
            lines.append(ShowNode(text=f"{f.fact}{ended}  [{', '.join(graph.episode_ids(fid))}]"))
        out.append(ShowNode(text=f"{ent.name} ({', '.join(ent.tags)})", children=lines))
    return out


def _subtree(graph: Graph, ids: list[str], depth: int) -> list[ShowNode]:
    out = []
    for cid in ids:
        cat = graph.categories.get(cid)
        if cat is not None:
            below = _subtree(graph, cat.child_ids, depth - 1) if depth > 1 else []
            out.append(
                ShowNode(
                    text=f"{cat.name} (layer {cat.layer}, "
                    f"{plural(len(cat.child_ids), 'child', 'children')})",
                    children=below,
                )
            )
        elif cid in graph.entities:
            ent = graph.entities[cid]
            held = plural(len(graph.episode_ids(cid)), "episode")
            out.append(ShowNode(text=f"{ent.name} [{held}]"))
    return out
