"""``memstrata show NAME`` for HiGMem: an event (by id or id prefix) with its summary, fact
sheet and linked turns, a turn (by episode id) with its note and its events, or a name
or word (in any script, however typed) with the turns whose keywords hold it; for each
builder that holds records in the namespace (``higmem``, then ``higmem-paper``, whose
nodes name it)."""

from __future__ import annotations

from memstrata import nlp
from memstrata.designs.higmem.builder import layer_cache
from memstrata.designs.higmem.layer import BUILDER, BUILDERS, Layers
from memstrata.engine.contracts import Context, ShowNode
from memstrata.wording import plural

WIDTH = 100
#: turns listed under a keyword
MOST = 20


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


def show(ctx: Context, namespace: str, name: str) -> list[ShowNode] | None:
    out: list[ShowNode] = []
    for builder in BUILDERS:
        lay = layer_cache(ctx).get(builder, namespace)
        if not lay.notes and not lay.events:
            continue
        found = _show(ctx, lay, namespace, name) or []
        if builder != BUILDER:
            found = [n.model_copy(update={"text": f"{builder}: {n.text}"}) for n in found]
        out += found
    return out or None


def _show(ctx: Context, lay: Layers, namespace: str, name: str) -> list[ShowNode] | None:
    want = name.strip()
    if len(want) >= 6:
        found = [e for e in lay.events if e.startswith(want)]
        if found:
            return [event_node(ctx, lay, namespace, e) for e in found[:5]]
    note = lay.notes.get(want)
    if note is None:
        return _keyword(ctx, lay, namespace, want)
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


def _keyword(ctx: Context, lay: Layers, namespace: str, want: str) -> list[ShowNode] | None:
    """The turns whose keywords hold every word of ``want`` (folded: "ZÜRICH" typed
    decomposed is zürich), at most ``MOST`` of them, in turn order."""
    # keywords are the parse's tokens: a hyphen parts them ("Jean-Luc" is jean, luc)
    words = {p for w in nlp.words(want) for p in w.replace("‐", "-").split("-") if p}
    if not words:
        return None
    turns = sorted(t for t, n in lay.notes.items() if words <= set(n.keywords))
    if not turns:
        return None
    eps = {e.id: e for e in ctx.store.get_episodes(namespace, turns[:MOST])}
    kids = [
        ShowNode(text=f"turn {t}  {_clip(f'{eps[t].speaker}: {eps[t].text}')}")
        for t in turns[:MOST]
        if t in eps
    ]
    return [ShowNode(text=f"{want}: a keyword of {plural(len(turns), 'turn')}", children=kids)]
