"""Statements of stored turns, for a design's heuristic tier: who each turn addresses,
and each turn's statements read once per text (:class:`TurnReader`).

A design keeps records, not statements; to learn which slots hold one value it needs the
statements of every turn its records cite. A reader keeps them per (episode id, text),
so a batch re-reads only new or corrected turns; after a restart the design hands the
cited episodes back from the store and they are read once more.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from memstrata.knowledge.slots import Change, changes
from memstrata.knowledge.statements import Statement, statements
from memstrata.models import Episode, aware


def addressees(episodes: Sequence[Episode]) -> dict[str, str | None]:
    """The person each turn addresses: the speaker of the nearest earlier turn with
    another speaker (a reply answers the turn before it), else of the nearest later
    one; None without a second speaker."""
    turns = sorted(episodes, key=_order)
    out: dict[str, str | None] = {}
    for n, ep in enumerate(turns):
        if not ep.speaker:
            out[ep.id] = None
            continue
        before = (t.speaker for t in reversed(turns[:n]) if t.speaker and t.speaker != ep.speaker)
        after = (t.speaker for t in turns[n + 1 :] if t.speaker and t.speaker != ep.speaker)
        out[ep.id] = next(before, None) or next(after, None)
    return out


def _order(ep: Episode) -> tuple[float, int]:
    return (aware(ep.occurred_at).timestamp() if ep.occurred_at else float("inf"), ep.seq)


def at(ep: Episode) -> float | None:
    """A turn's time in POSIX seconds (None when it has none)."""
    return aware(ep.occurred_at).timestamp() if ep.occurred_at else None


class TurnReader:
    """Statements of turns, each text read once (see the module)."""

    def __init__(self) -> None:
        self._read: dict[str, tuple[str, list[Statement]]] = {}
        self._when: dict[str, datetime] = {}
        self._order: dict[str, tuple[float, int]] = {}

    def read(self, episodes: Iterable[Episode]) -> dict[str, list[Statement]]:
        """Episode id -> its statements, for ``episodes`` (all the turns in hand, so the
        addressee of each is known from its neighbours), in the turns' order (time, then
        the order they were added in). A turn read before with the same text is not read
        again; a corrected one is."""
        eps = sorted(episodes, key=_order)
        to = addressees(eps)
        out: dict[str, list[Statement]] = {}
        for ep in eps:
            known = self._read.get(ep.id)
            if known is None or known[0] != ep.text:
                said = statements(
                    ep.text, source=ep.id, at=at(ep), speaker=ep.speaker, addressee=to[ep.id]
                )
                known = self._read[ep.id] = (ep.text, said)
            out[ep.id] = known[1]
            self._when[ep.id] = ep.occurred_at or ep.created_at
            self._order[ep.id] = _order(ep)
        return out

    def when(self, episode: str) -> datetime:
        """The time of a turn read (when it happened, else when it was stored), as the
        store gives it: what a superseded record's ``invalid_at`` becomes."""
        return self._when.get(episode) or datetime.now(UTC)

    def in_order(self, said: dict[str, list[Statement]]) -> dict[str, list[Statement]]:
        """``said`` in the turns' order (time, a turn without one after those with one,
        then the order they were added in), whichever batch each was read in: a turn
        imported late with an early time is placed where it happened."""
        last = (float("inf"), 1 << 62)
        return dict(sorted(said.items(), key=lambda kv: self._order.get(kv[0], last)))

    def known(self, ids: Iterable[str]) -> dict[str, list[Statement]]:
        """The statements already read of the turns ``ids`` (the others are absent)."""
        return {i: self._read[i][1] for i in ids if i in self._read}


_READERS: weakref.WeakKeyDictionary[object, TurnReader] = weakref.WeakKeyDictionary()


def reader_for(owner: object) -> TurnReader:
    """The reader kept for ``owner`` (a design's in-memory graph of one namespace) while
    it lives, so each batch reads only its new or corrected turns."""
    reader = _READERS.get(owner)
    if reader is None:
        reader = _READERS[owner] = TurnReader()
    return reader


def supersessions(by_episode: dict[str, list[Statement]]) -> list[Change]:
    """The changes the statements of these turns make
    (:func:`memstrata.knowledge.slots.changes`)."""
    return changes(s for stated in by_episode.values() for s in stated)


__all__ = ["TurnReader", "addressees", "at", "reader_for", "supersessions"]
