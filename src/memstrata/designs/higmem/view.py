"""The explorer's view of HiGMem: each event with its summary and fact sheet, over the
turns it links (with each turn's keywords)."""

from __future__ import annotations

from memstrata.designs.higmem.layer import BUILDER
from memstrata.designs.higmem.records import Event, TurnNote
from memstrata.engine.contracts import Context
from memstrata.engine.views import DesignView, View, ViewNode, ViewQuery, short, tree


def render(ctx: Context, namespace: str, query: ViewQuery) -> View:
    records = ctx.store.get_records
    notes = {
        n.turn_id: n
        for n in records(namespace, "turn_note", builder=BUILDER)
        if isinstance(n, TurnNote)
    }
    nodes: list[ViewNode] = []
    for ev in records(namespace, "event", builder=BUILDER):
        if not isinstance(ev, Event):
            continue
        sheet = "\n".join(f"{f.when + ': ' if f.when else ''}{f.text}" for f in ev.facts)
        nodes.append(
            ViewNode(
                id=ev.id,
                label=short(ev.summary),
                kind="event",
                text=ev.summary + (f"\n\n{sheet}" if sheet else ""),
                group="event",
                sources=ev.sources,
                details={"turns": ", ".join(ev.turn_ids)},
            )
        )
        for turn in ev.turn_ids:
            note = notes.get(turn)
            nodes.append(
                ViewNode(
                    id=f"{ev.id}/{turn}",
                    label=turn + (f": {', '.join(note.keywords[:5])}" if note else ""),
                    kind="turn",
                    text=note.context if note else "",
                    group="turn",
                    parent=ev.id,
                    depth=1,
                    sources=[s for s in ev.sources if s.episode == turn],
                    details={"tags": ", ".join(note.tags) if note else ""},
                )
            )
    return tree(EVENTS, BUILDER, nodes, query)


EVENTS = DesignView(
    name="higmem",
    title="HiGMem events and their turns",
    layout="tree",
    builder=BUILDER,
    render=render,
    description="Events with their summaries and fact sheets, over the turns they link.",
)
VIEWS = [EVENTS]
