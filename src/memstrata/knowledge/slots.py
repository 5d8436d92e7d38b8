"""Which slots hold one value at a time, learned from the statements themselves, and
which statement supersedes which (:func:`changes`).

Nothing here knows a slot by name. A slot is **single-valued** when people's values in
it change over time and do not stand side by side:

* a *change* is a subject's statement of a value other than the one it last stated in
  the slot, in a later turn;
* *side by side* is a turn stating two values of the slot for one subject ("I play the
  piano and the viola"), or an older value stated again after a newer one (it held all
  along: "visited Rome", "visited Paris", "visited Rome again").

Pooled over every subject, a slot with a change (:data:`ACTION_CHANGES` for the slot
of an action verb, whose objects vary more than a state's) and at most one side-by-side
sign per four changes (:data:`SIDE_BY_SIDE`) is single-valued; "live in", "work at",
"rent" come out so from ordinary talk, "like", "visit", "be friends with" do not
(people state several at once, or go back to them). A slot seen without any change is
never single-valued: there is nothing to supersede.

In a single-valued slot, a later statement by the same subject with another value
supersedes every earlier statement still holding; a negated statement (a negation, or
a verb that ends a state: "I quit Deltares") ends the subject's earlier statements of
that value in any slot. A value names the same thing as another when the words of one
are among the other's ("Škoda Enyaq" and "Enyaq").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from memstrata.knowledge.statements import ENDED, Statement
from memstrata.nlp import name_key

#: side-by-side signs tolerated per change for a slot to stay single-valued (a slip of
#: the parse, a "moved back"): one in four
SIDE_BY_SIDE = 0.25
#: changes an action verb's slot needs ("play", "drive"): activities vary more than
#: states, so one new object is no sign that the old one stopped
ACTION_CHANGES = 2


@dataclass(frozen=True)
class Change:
    """``new`` supersedes ``old`` (same subject; same slot, or ``new`` negated)."""

    old: Statement
    new: Statement


@dataclass
class SlotSigns:
    """What the statements show of one slot, pooled over subjects."""

    changes: int = 0
    side_by_side: int = 0
    #: read as a state (statements.Statement.state) rather than an action's object
    state: bool = True

    @property
    def single(self) -> bool:
        least = 1 if self.state else ACTION_CHANGES
        return self.changes >= least and self.side_by_side <= SIDE_BY_SIDE * self.changes


def same_value(a: str, b: str) -> bool:
    """Whether two values name one thing (the words of one among the other's)."""
    x, y = set(name_key(a).split()), set(name_key(b).split())
    return bool(x and y) and (x <= y or y <= x)


def ordered(statements: Iterable[Statement]) -> list[Statement]:
    """By the turn's time when every statement has one, else as given."""
    items = list(statements)
    if all(s.at is not None for s in items):
        return sorted(items, key=lambda s: s.at or 0.0)
    return items


def learn(statements: Iterable[Statement]) -> dict[str, SlotSigns]:
    """The signs of every slot (see the module)."""
    signs: dict[str, SlotSigns] = defaultdict(SlotSigns)
    by: dict[tuple[str, str], list[Statement]] = defaultdict(list)
    for s in ordered(statements):
        if not s.negated:
            by[(s.subject, s.slot)].append(s)
    for (_, slot), seq in by.items():
        sign = signs[slot]
        sign.state = sign.state and all(s.state for s in seq)
        turns: dict[str, list[str]] = {}
        for s in seq:
            vals = turns.setdefault(s.source, [])
            if not any(same_value(v, s.value) for v in vals):
                vals.append(s.value)
        history: list[str] = []
        for vals in turns.values():
            if len(vals) > 1:
                sign.side_by_side += 1
            for v in vals:
                if history and same_value(history[-1], v):
                    continue
                if any(same_value(h, v) for h in history[:-1]):
                    sign.side_by_side += 1  # an older value again: it held all along
                elif history and len(vals) == 1:
                    sign.changes += 1
                history.append(v)
    return dict(signs)


def single_valued(statements: Iterable[Statement]) -> set[str]:
    """The slots the statements show to hold one value at a time."""
    return {slot for slot, sign in learn(statements).items() if sign.single}


def changes(statements: Iterable[Statement]) -> list[Change]:
    """Every supersession the statements make (see the module), in the order of the
    superseding statements."""
    items = ordered(statements)
    single = single_valued(items)
    out: list[Change] = []
    holding: dict[str, list[Statement]] = defaultdict(list)  # subject -> still holding
    for s in items:
        held = holding[s.subject]
        if s.negated:
            ended = [
                o
                for o in held
                if o.source != s.source
                and s.slot in (ENDED, o.slot)
                and same_value(o.value, s.value)
            ]
        elif s.slot in single:
            ended = [
                o
                for o in held
                if o.slot == s.slot and o.source != s.source and not same_value(o.value, s.value)
            ]
        else:
            ended = []
        out += [Change(o, s) for o in ended]
        kept = [o for o in held if o not in ended]
        if not s.negated:
            kept.append(s)
        holding[s.subject] = kept
    return out


__all__ = [
    "ACTION_CHANGES",
    "SIDE_BY_SIDE",
    "Change",
    "SlotSigns",
    "changes",
    "learn",
    "same_value",
    "single_valued",
]
