"""The two layers of one namespace held in memory: turn notes, events, their vectors.

Records are the store's ``turn_note`` and ``event`` kinds. An event's links to its turns
are ``Event.turn_ids`` intersected with its provenance (``sources``), so a deleted or
updated turn drops out of the event the moment the store removes its span; the turn's
way up (which events it belongs to) is derived from the same links when the layer loads.
Changes are tracked and written with the builder's done marks in one transaction.

Two builders write these kinds: ``higmem`` (ours) and ``higmem-paper`` (the paper's
pipeline). Each owns its own notes and events, so a namespace may hold both at once:
layers are loaded, cached and written per (builder, namespace).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from memstrata.designs.higmem.notes import turn_body
from memstrata.designs.higmem.records import Event, TurnNote, profile_key
from memstrata.embed.base import Embedder
from memstrata.embed.cache import embed_cached
from memstrata.models import Derived, Episode, Span
from memstrata.retrieval.text import stems
from memstrata.store.base import Store

Vec = NDArray[np.float32]
#: the builders whose records this design reads and writes: ours and the paper's
BUILDER = "higmem"
PAPER_BUILDER = "higmem-paper"
BUILDERS = (BUILDER, PAPER_BUILDER)


def unit(rows: Vec) -> Vec:
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return (rows / np.where(norms == 0, 1.0, norms)).astype(np.float32)


class Layers:
    """One builder's turn notes by turn id, events by id, links both ways, unit vectors
    of both."""

    def __init__(
        self, store: Store, embedder: Embedder, namespace: str, builder: str = BUILDER
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.namespace = namespace
        self.builder = builder
        self.notes: dict[str, TurnNote] = {}
        self.events: dict[str, Event] = {}
        self.event_vecs: dict[str, Vec] = {}
        self.events_of: dict[str, list[str]] = {}
        self.stamp: tuple[int, str] = (0, "")
        self._df: Counter[str] | None = None
        self._n = 0
        self._dirty: set[str] = set()
        self._gone: set[str] = set()
        self._profiles: dict[str, list[tuple[str, str, set[str]]]] | None = None
        self._backlinks: dict[str, list[str]] | None = None

    @classmethod
    def load(
        cls, store: Store, embedder: Embedder, namespace: str, builder: str = BUILDER
    ) -> Layers:
        """The records ``builder`` owns in the namespace."""
        lay = cls(store, embedder, namespace, builder)
        lay.stamp = store.records_stamp(namespace)
        for rec in store.get_records(namespace, "turn_note", builder=builder):
            assert isinstance(rec, TurnNote)
            lay.notes[rec.turn_id] = rec
        for rec in store.get_records(namespace, "event", builder=builder):
            assert isinstance(rec, Event)
            linked = {s.episode for s in rec.sources}
            rec.turn_ids = [t for t in rec.turn_ids if t in linked]
            for fact in rec.facts:
                fact.turns = [t for t in fact.turns if t in linked]
            lay.events[rec.id] = rec
            for t in rec.turn_ids:
                lay.events_of.setdefault(t, []).append(rec.id)
        lay.embed_events(list(lay.events))
        return lay

    def is_current(self) -> bool:
        return self.store.records_stamp(self.namespace) == self.stamp

    def idf(self, term: str) -> float:
        """BM25's IDF of a stemmed term (:func:`stem`) over the namespace's turns (counted
        once per load)."""
        if self._df is None:
            self._df = Counter()
            after = 0
            while page := self.store.iter_episodes(self.namespace, after, 1000):
                for ep in page:
                    self._df.update(stems(turn_body(ep)))
                after = page[-1].key
                self._n += len(page)
        df = self._df.get(term, 0)
        return math.log(1 + (self._n - df + 0.5) / (df + 0.5))

    # vectors ----------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> Vec:
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return unit(embed_cached(self.store, self.embedder, list(texts)))

    def embed_events(self, ids: Sequence[str]) -> None:
        ids = [i for i in ids if i in self.events]
        for eid, v in zip(ids, self.embed([self.events[i].summary for i in ids]), strict=True):
            self.event_vecs[eid] = v

    def event_matrix(self) -> tuple[list[str], Vec]:
        ids = [i for i in self.events if i in self.event_vecs]
        if not ids:
            return [], np.zeros((0, self.embedder.dim), dtype=np.float32)
        return ids, np.stack([self.event_vecs[i] for i in ids])

    def top_events(self, vec: Vec, k: int) -> list[tuple[str, float]]:
        """The ``k`` events most similar to ``vec`` (Eq. 3), best first."""
        ids, rows = self.event_matrix()
        if not ids:
            return []
        sims = rows @ vec
        order = np.argsort(-sims, kind="stable")[:k]
        return [(ids[i], float(sims[i])) for i in order]

    # the notes' profile keys and direct links -------------------------------------------
    def profiles(self) -> dict[str, list[tuple[str, str, set[str]]]]:
        """Profile keys by person (case-folded): (turn, attribute, attribute stems)."""
        if self._profiles is None:
            self._profiles = {}
            for turn, note in self.notes.items():
                for pair in filter(None, map(profile_key, note.profile)):
                    person, attribute = pair
                    entry = (turn, attribute, set(stems(attribute)))
                    self._profiles.setdefault(person.casefold(), []).append(entry)
        return self._profiles

    def linked_turns(self, turn: str) -> list[str]:
        """The turns ``turn`` links to and the later turns that link to it."""
        if self._backlinks is None:
            self._backlinks = {}
            for t, each in self.notes.items():
                for target in each.links_to:
                    self._backlinks.setdefault(target, []).append(t)
        own = self.notes.get(turn)
        ahead = own.links_to if own is not None else []
        return list(dict.fromkeys([*ahead, *self._backlinks.get(turn, [])]))

    # changing ---------------------------------------------------------------------------
    def put_note(self, note: TurnNote) -> None:
        old = self.notes.get(note.turn_id)
        if old is not None and old.id != note.id:
            self._gone.add(old.id)
        self.notes[note.turn_id] = note
        self._dirty.add(note.id)
        self._profiles = self._backlinks = None

    def put_event(self, event: Event) -> None:
        self.events[event.id] = event
        self._dirty.add(event.id)

    def link(self, event: Event, ep: Episode) -> None:
        """Eq. (5): the link between the event and the turn, both ways, with provenance."""
        if ep.id not in event.turn_ids:
            event.turn_ids.append(ep.id)
            event.sources.append(Span(episode=ep.id, start=0, end=len(ep.text)))
        ups = self.events_of.setdefault(ep.id, [])
        if event.id not in ups:
            ups.append(event.id)
        self._dirty.add(event.id)

    def touch(self, rec_id: str) -> None:
        self._dirty.add(rec_id)

    def drop_event(self, event_id: str) -> None:
        """Remove an event and its links (a repair left it without turns)."""
        event = self.events.pop(event_id)
        self.event_vecs.pop(event_id, None)
        for t in event.turn_ids:
            ups = [e for e in self.events_of.get(t, []) if e != event_id]
            if ups:
                self.events_of[t] = ups
            else:
                self.events_of.pop(t, None)
        self._dirty.discard(event_id)
        self._gone.add(event_id)

    def snapshot(self, ids: Sequence[str]) -> dict[str, Event | None]:
        return {i: self.events[i].model_copy(deep=True) if i in self.events else None for i in ids}

    def restore(self, saved: dict[str, Event | None], turn: str) -> None:
        """Undo what one turn did to the events in ``saved`` (its LLM calls failed)."""
        for eid, ev in saved.items():
            if ev is None:
                self.events.pop(eid, None)
                self.event_vecs.pop(eid, None)
                self._dirty.discard(eid)
            else:
                self.events[eid] = ev
                self.embed_events([eid])
        self.events_of[turn] = [e for e in self.events_of.get(turn, []) if e in self.events]
        if not self.events_of[turn]:
            del self.events_of[turn]

    def flush(self, done: Sequence[int] | None = None) -> None:
        """Write changed notes and events, and the builder's done marks on the episode
        keys ``done``, in one go."""
        recs: dict[str, Derived] = {n.id: n for n in self.notes.values()}
        recs.update(self.events)
        put = [recs[i] for i in sorted(self._dirty) if i in recs]
        built = (self.builder, list(done)) if done is not None else None
        self.store.write_records(self.namespace, put, sorted(self._gone), built, owner=self.builder)
        self._dirty.clear()
        self._gone.clear()
        self._profiles = self._backlinks = None
        self.stamp = self.store.records_stamp(self.namespace)


def layer_problems(lay: Layers) -> list[str]:
    """Broken invariants, as sentences: links both ways, provenance, fact links."""
    out: list[str] = []
    for eid, ev in lay.events.items():
        cited = {s.episode for s in ev.sources}
        if not ev.turn_ids:
            out.append(f"event {eid} links no turn")
        if set(ev.turn_ids) != cited:
            out.append(f"event {eid} links other turns than its provenance")
        for t in ev.turn_ids:
            if eid not in lay.events_of.get(t, []):
                out.append(f"turn {t} does not link back to event {eid}")
        for fact in ev.facts:
            if not set(fact.turns) <= set(ev.turn_ids):
                out.append(f"event {eid} has a fact citing a turn it does not link")
        if not ev.summary.strip():
            out.append(f"event {eid} has no summary")
    for t, eids in lay.events_of.items():
        for eid in eids:
            if eid not in lay.events or t not in lay.events[eid].turn_ids:
                out.append(f"turn {t} links to event {eid}, which does not link it")
    for t, note in lay.notes.items():
        if [s.episode for s in note.sources] != [t]:
            out.append(f"the note of turn {t} does not rest on that turn alone")
    return out


class LayerCache:
    """One loaded :class:`Layers` per (builder, namespace), reloaded when another writer
    changed the namespace's records (``Store.records_stamp``)."""

    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self._held: dict[tuple[str, str], Layers] = {}

    def get(self, builder: str, namespace: str) -> Layers:
        held = self._held.get((builder, namespace))
        if held is not None and held.is_current():
            return held
        lay = Layers.load(self.store, self.embedder, namespace, builder)
        self._held[(builder, namespace)] = lay
        return lay

    def forget(self, builder: str, namespace: str) -> None:
        self._held.pop((builder, namespace), None)
