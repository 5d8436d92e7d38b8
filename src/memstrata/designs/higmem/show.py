"""``memstrata show NAME`` for HiGMem: an event (by id or id prefix) with its summary, fact
sheet and linked turns, or a turn (by episode id) with its note and its events."""

from __future__ import annotations

from memstrata.designs.higmem.builder import layer_cache
from memstrata.designs.higmem.layer import Layers
from memstrata.engine.contracts import Context, ShowNode
from memstrata.wording import plural

WIDTH = 100


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


def show(ctx: Context, namespace: str, name: str) -> list[ShowNode] | None:
    lay = layer_cache(ctx).get(namespace)
    want = name.strip()
    if len(want) >= 6:
        found = [e for e in lay.events if e.startswith(want)]
        if found:
            return [event_node(ctx, lay, namespace, e) for e in found[:5]]
    note = lay.notes.get(want)
    if note is None:
        return None
    lines = [
        ShowNode(text=f"keywords: {', '.join(note.keywords) or '-'}"),
        ShowNode(text=f"tags: {', '.join(note.tags) or '-'}"),
        ShowNode(text=f"context: {note.context or '-'}"),
        ShowNode(
            text="dates: " + (", ".join(f"{d['phrase']} = {d['date']}" for d in note.dates) or "-")
        ),
        ShowNode(text=f"profile: {'; '.join(note.profile) or '-'}"),
        ShowNode(text=f"links: {', '.join(lay.linked_turns(want)) or '-'}"),
    ]
    ups = lay.events_of.get(want, [])
    lines.append(
        ShowNode(
            text=f"in {plural(len(ups), 'event')}",
            children=[ShowNode(text=f"event {e}: {_clip(lay.events[e].summary)}") for e in ups],
        )
    )
    return [ShowNode(text=f"turn {want}", children=lines)]


def event_node(ctx: Context, lay: Layers, namespace: str, eid: str) -> ShowNode:
    ev = lay.events[eid]
    eps = {e.id: e for e in ctx.store.get_episodes(namespace, ev.turn_ids)}
    facts = [
        ShowNode(text=f"{f.when or '?'}  {_clip(f.text)}  [{', '.join(f.turns)}]") for f in ev.facts
    ]
    turns = [
        ShowNode(text=f"{t}  {_clip(f'{eps[t].speaker}: {eps[t].text}')}")
        for t in ev.turn_ids
        if t in eps
    ]
    return ShowNode(
        text=f"event {eid} ({plural(len(ev.turn_ids), 'turn')})",
        children=[
            ShowNode(text=f"summary: {ev.summary}"),
            ShowNode(text=f"fact sheet ({len(ev.facts)})", children=facts),
            ShowNode(text=f"linked turns ({len(turns)})", children=turns),
        ],
    )
