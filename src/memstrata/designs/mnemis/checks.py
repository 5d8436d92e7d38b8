"""The Mnemis hierarchy's rules, checked: what a valid build must hold (section 3.2),
for the builder's report, the benchmarks and ``memstrata show``."""

from __future__ import annotations

from memstrata.designs.mnemis.graph import SPEAKER_CATEGORY, Graph


def hierarchy_problems(graph: Graph, n: int = 3, max_layers: int = 4) -> list[str]:
    """Every broken hierarchy rule in ``graph``, as readable lines; empty when valid.

    Checked: the layer limit, the reduction rule from layer 2, the compression ratio
    (``Speaker`` exempt), parent/child links that agree and skip no layer, a parent for
    every category below the top, every entity in layer 1 and every speaker in
    ``Speaker``. Benchmarks and ``memstrata show`` use it to prove a build valid."""
    out: list[str] = []
    cats = graph.categories
    top = graph.top_layer()
    if top > max_layers:
        out.append(f"{top} layers, more than {max_layers}")
    counts = [len(graph.entities)] + [len(graph.layer(i)) for i in range(1, top + 1)]
    for i in range(2, top + 1):
        if counts[i] > counts[i - 1]:
            out.append(
                f"layer {i} has {counts[i]} nodes, more than layer {i - 1} ({counts[i - 1]})"
            )
    for c in cats.values():
        kids = len(c.child_ids)
        if c.name != SPEAKER_CATEGORY and kids != 1 and kids < n:
            out.append(f"category {c.name!r} (layer {c.layer}) has {kids} children, fewer than {n}")
        for child in c.child_ids:
            sub = cats.get(child)
            if c.layer == 1 and child not in graph.entities:
                out.append(f"category {c.name!r} (layer 1) holds a non-entity {child}")
            elif c.layer > 1 and (sub is None or sub.layer != c.layer - 1):
                out.append(f"category {c.name!r} (layer {c.layer}) skips a layer to {child}")
            elif sub is not None and c.id not in sub.parent_ids:
                out.append(f"{sub.name!r} does not list its parent {c.name!r}")
        if c.layer < top and not c.parent_ids:
            out.append(f"category {c.name!r} at layer {c.layer} has no parent")
    if cats:
        placed = {child for c in graph.layer(1) for child in c.child_ids}
        left = [graph.entities[e].name for e in graph.entities if e not in placed]
        if left:
            out.append(f"{len(left)} entities outside layer 1, e.g. {left[:3]}")
        speaker_cats = [c for c in graph.layer(1) if c.name == SPEAKER_CATEGORY]
        for sid in graph.speakers():
            if not any(sid in c.child_ids for c in speaker_cats):
                out.append(f"speaker {graph.entities[sid].name!r} is not under {SPEAKER_CATEGORY}")
    return out
