"""The event layer, heuristic tier: affiliation by similarity and locality, extractive
summaries and fact sheets.

**Affiliation.** The candidates are the ``k_event`` events most similar to the analysed
turn (Eq. 3) together with the *recent* events, those linked to the turns of the
window (the "recent event context" of the affiliation prompt). A turn joins

* a recent event whose cosine is at least ``join_local``: a conversation stays on a
  topic for a run of turns, so a modest similarity suffices next door;
* any candidate whose cosine is at least ``join_far``: a topic that comes back in a later
  session must be much closer to be taken for the same event;
* the event of the turn before, when the turn has fewer than ``backchannel_terms``
  content terms ("Thanks!", "Wow, that's great"): such a turn has no topic of its own and
  belongs to what it answers.

At most ``max_join`` events, best first; none passing is ``NEW_EVENT``.

**Update** (section 3.2, with τ): an event with fewer than τ linked turns is refreshed
whole, summary and fact sheet recomputed from every linked turn; a larger one only gets
the new turn's fact appended. Both are extractive: the summary is the two sentences most
central to the event's turns (cosine to their mean) with the speakers, then its most
frequent keywords; a fact is a turn's most informative sentence (most content terms),
dated by the turn's resolved date phrase or else its own date, linked to the turn.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from memstrata.designs.higmem.layer import Layers, Vec
from memstrata.designs.higmem.records import EventFact, TurnNote
from memstrata.models import Episode
from memstrata.retrieval.text import content_terms, sentences

SUMMARY_SENTENCES = 2
SUMMARY_KEYWORDS = 6
FACT_CHARS = 200


def affiliate(
    lay: Layers,
    vec: Vec,
    window: Sequence[Episode],
    ep: Episode,
    *,
    k_event: int,
    join_local: float,
    join_far: float,
    max_join: int,
    backchannel_terms: int,
) -> list[str]:
    """The events the turn joins, best first; empty means ``NEW_EVENT``."""
    recent = list(dict.fromkeys(e for w in window for e in lay.events_of.get(w.id, [])))
    cands = dict(lay.top_events(vec, k_event))
    for eid in recent:
        if eid not in cands and eid in lay.event_vecs:
            cands[eid] = float(lay.event_vecs[eid] @ vec)
    chosen = {
        eid: sim
        for eid, sim in cands.items()
        if sim >= join_far or (eid in recent and sim >= join_local)
    }
    if not chosen and window and len(content_terms(ep.text)) < backchannel_terms:
        before = lay.events_of.get(window[-1].id, [])
        if before:
            return before[-1:]
    return sorted(chosen, key=lambda e: -chosen[e])[:max_join]


def _sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in sentences(text)] or ([text.strip()] if text.strip() else [])


def fact_of(ep: Episode, note: TurnNote | None) -> EventFact:
    """The turn's most informative sentence, dated, linked to the turn."""
    pool = _sentences(ep.text) or [ep.text]
    best = max(pool, key=lambda s: (len(content_terms(s)), -pool.index(s)))
    if len(best) > FACT_CHARS:
        best = best[: FACT_CHARS - 1].rstrip() + "…"
    text = f"{ep.speaker}: {best}" if ep.speaker else best
    when = None
    if note is not None and note.dates:
        when = note.dates[0]["date"]
    elif ep.occurred_at is not None:
        when = ep.occurred_at.strftime("%Y-%m-%d")
    return EventFact(text=text, when=when, turns=[ep.id])


def summary_of(lay: Layers, turns: Sequence[Episode]) -> str:
    """The sentences most central to the turns, with speakers, then frequent keywords."""
    pool: list[tuple[str, str]] = []  # (speaker, sentence)
    for ep in turns:
        for s in _sentences(ep.text):
            pool.append((ep.speaker or "", s))
    if not pool:
        return ""
    if len(pool) <= SUMMARY_SENTENCES:
        picked = list(range(len(pool)))
    else:
        vecs = lay.embed([s for _, s in pool])
        centre = vecs.mean(axis=0)
        centre = centre / (np.linalg.norm(centre) or 1.0)
        score = vecs @ centre
        picked = sorted(np.argsort(-score, kind="stable")[:SUMMARY_SENTENCES].tolist())
    text = " ".join(f"{pool[i][0]}: {pool[i][1]}" if pool[i][0] else pool[i][1] for i in picked)
    counts: Counter[str] = Counter()
    for ep in turns:
        note = lay.notes.get(ep.id)
        counts.update(note.keywords if note else content_terms(ep.text)[:5])
    top = [w for w, _ in counts.most_common(SUMMARY_KEYWORDS)]
    return text + (f" (topics: {', '.join(top)})" if top else "")


def refresh(lay: Layers, turns: Sequence[Episode]) -> tuple[str, list[EventFact]]:
    """Summary and fact sheet recomputed from every linked turn (below τ)."""
    facts = [fact_of(ep, lay.notes.get(ep.id)) for ep in turns]
    return summary_of(lay, turns), facts
