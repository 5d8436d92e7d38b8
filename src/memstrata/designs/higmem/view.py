"""The explorer's views of HiGMem: each event with its summary and fact sheet, over the
turns it links (with each turn's keywords); one view per builder (``higmem`` and
``higmem-paper``), each over that builder's own records."""

from __future__ import annotations

from memstrata.designs.higmem.layer import BUILDER, PAPER_BUILDER
from memstrata.designs.higmem.records import Event, TurnNote
from memstrata.engine.contracts import Context
from memstrata.engine.views import DesignView, View, ViewNode, ViewQuery, short, tree


def nodes_of(ctx: Context, namespace: str, builder: str) -> list[ViewNode]:
    """The events ``builder`` owns in the namespace, each over its turns."""
    records = ctx.store.get_records
    notes = {
        n.turn_id: n
        for n in records(namespace, "turn_note", builder=builder)
        if isinstance(n, TurnNote)
    }
    nodes: list[ViewNode] = []
    for ev in records(namespace, "event", builder=builder):
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
    return nodes


def events_view(name: str, title: str, builder: str, description: str) -> DesignView:
    """The tree of ``builder``'s events and their turns."""

    def render(ctx: Context, namespace: str, query: ViewQuery) -> View:
        return tree(spec, "higmem", nodes_of(ctx, namespace, builder), query)

    spec = DesignView(
        name=name,
        title=title,
        layout="tree",
        builder=builder,
        render=render,
        description=description,
    )
    return spec


EVENTS = events_view(
    "higmem",
    "HiGMem events and their turns",
    BUILDER,
    "Events with their summaries and fact sheets, over the turns they link.",
)
PAPER_EVENTS = events_view(
    "higmem-paper",
    "HiGMem events and their turns (the paper's pipeline)",
    PAPER_BUILDER,
    "The higmem-paper builder's events with their summaries and fact sheets, over the "
    "turns they link.",
)
VIEWS = [EVENTS, PAPER_EVENTS]
