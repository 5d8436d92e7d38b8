"""Statements of stored turns, for a design's heuristic tier: who each turn addresses,
and each turn's statements read once per text (:class:`TurnReader`).

A design keeps records, not statements; to learn which slots hold one value it needs the
statements of every turn its records cite. A reader keeps them per (episode id, text),
so a batch re-reads only new or corrected turns; after a restart the design hands the
cited episodes back from the store and they are read once more.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memstrata.knowledge.slots import Change, changes
from memstrata.knowledge.statements import Statement, statements
from memstrata.models import Episode


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
    return (ep.occurred_at.timestamp() if ep.occurred_at else float("inf"), ep.seq)


def at(ep: Episode) -> float | None:
    """A turn's time in POSIX seconds (None when it has none)."""
    return ep.occurred_at.timestamp() if ep.occurred_at else None


class TurnReader:
    """Statements of turns, each text read once (see the module)."""

    def __init__(self) -> None:
        self._read: dict[tuple[str, str], list[Statement]] = {}

    def read(self, episodes: Iterable[Episode]) -> dict[str, list[Statement]]:
        """Episode id -> its statements, for ``episodes`` (all the turns in hand, so the
        addressee of each is known from its neighbours), in the turns' order (time, then
        the order they were added in)."""
        eps = sorted(episodes, key=_order)
        to = addressees(eps)
        out: dict[str, list[Statement]] = {}
        for ep in eps:
            key = (ep.id, ep.text)
            if key not in self._read:
                self._read[key] = statements(
                    ep.text, source=ep.id, at=at(ep), speaker=ep.speaker, addressee=to[ep.id]
                )
            out[ep.id] = self._read[key]
        return out


def supersessions(by_episode: dict[str, list[Statement]]) -> list[Change]:
    """The changes the statements of these turns make
    (:func:`memstrata.knowledge.slots.changes`)."""
    return changes(s for stated in by_episode.values() for s in stated)


__all__ = ["TurnReader", "addressees", "at", "supersessions"]
