"""The search order a question about time gets: the current value first, the earlier one,
or the change.

A search's hits are ranked by relevance. A turn stating where Jonas lives now and one
stating where he lived before are equally relevant to "Where does Jonas live?" (both
name a city and the verb), so relevance cannot tell them apart; what memory knows of
their succession can. Only the hits involved in a succession move, and only among the
places they already hold; every other hit keeps its place, so a present-tense question
with nothing to do with a change is ranked as relevance ranked it, and which turns are
in the first ``window`` sources does not change (recall there is relevance's).

A succession is a pair of source turns, one stating a value and a later one stating the
value that replaced it, known

* from the records of any design built in the namespace: a record with ``replaced_by``
  (a superseded Mnemis fact, a PersonalAI triplet or thesis) rests on the old turns, its
  replacements on the new ones; and
* from the hits' turns themselves, built or not: their statements in one subject's
  single-valued slot with different values (:func:`memstrata.knowledge.slots.changes`).

Within each group of linked turns (one subject's one slot, as a rule), the hits are put
in the order the question wants: ``now``, the current turn first (the one nothing
replaced), then the ones it replaced, latest first; ``past``, the value just before the
current one first; ``first``, the earliest; ``change``, the turns where a new value
appears first.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from memstrata.knowledge import statements as reader
from memstrata.knowledge.asking import Asked, Focus, asked, asks_amount, focus, says
from memstrata.knowledge.quantities import Amount, amount_pairs, amounts, asked_amounts
from memstrata.knowledge.slots import Change, changes
from memstrata.knowledge.statements import Statement, statements
from memstrata.models import Derived, Episode, Hit, aware, load_kinds
from memstrata.store.base import Store

#: distinct source turns among which a question about time decides the order
WINDOW = 10

Pair = tuple[str, str]  # (turn stating the old value, turn stating what replaced it)


def window_end(hits: Sequence[Hit], window: int | None = None) -> int:
    """The number of leading hits whose distinct sources fit in ``window`` (:data:`WINDOW`)."""
    window = WINDOW if window is None else window
    seen: set[str] = set()
    for i, h in enumerate(hits):
        if len(seen | set(h.sources)) > window:
            return i
        seen.update(h.sources)
    return len(hits)


class Successions:
    """The successions of turns a pair list states: which turn replaced which, how many
    replacements follow a turn, and the groups of linked turns."""

    def __init__(self, pairs: Iterable[Pair]) -> None:
        self.later: dict[str, set[str]] = defaultdict(set)
        self.new: set[str] = set()
        self._parent: dict[str, str] = {}
        for old, new in pairs:
            if old == new:
                continue
            self.later[old].add(new)
            self.new.add(new)
            self._union(old, new)

    def __contains__(self, turn: object) -> bool:
        return turn in self._parent

    def group(self, turn: str) -> str:
        while self._parent[turn] != turn:
            self._parent[turn] = self._parent[self._parent[turn]]
            turn = self._parent[turn]
        return turn

    def _union(self, a: str, b: str) -> None:
        for t in (a, b):
            self._parent.setdefault(t, t)
        ra, rb = self.group(a), self.group(b)
        if ra != rb:
            self._parent[rb] = ra

    def depth(self, turn: str, _seen: frozenset[str] = frozenset()) -> int:
        """Replacements after ``turn``'s value: 0 for the current one (a cycle, two turns
        replacing each other, stops the count)."""
        after = [t for t in self.later.get(turn, ()) if t not in _seen]
        if not after:
            return 0
        return 1 + max(self.depth(t, _seen | {turn}) for t in after)


def order(hits: list[Hit], wants: Asked | None, pairs: Iterable[Pair]) -> list[Hit]:
    """``hits`` with those involved in a succession put in the order ``wants`` asks for,
    each group among its own places (see the module); the rest unmoved."""
    if wants is None:
        return hits
    end = window_end(hits)
    head = hits[:end]
    inside = {s for h in head for s in h.sources}
    known = Successions((o, n) for o, n in pairs if o in inside and n in inside)
    groups: dict[str, list[int]] = defaultdict(list)
    keys: dict[int, tuple[int, int]] = {}
    for i, h in enumerate(head):
        mine = [s for s in h.sources if s in known]
        if not mine:
            continue
        groups[known.group(mine[0])].append(i)
        keys[i] = _key(wants, [known.depth(s) for s in mine], any(s in known.new for s in mine))
    out = list(head)
    for places in groups.values():
        for place, i in zip(places, sorted(places, key=lambda i: (keys[i], i)), strict=True):
            out[place] = head[i]
    return out + hits[end:]


def _key(wants: Asked, depths: list[int], new: bool) -> tuple[int, int]:
    """Smaller first. A hit citing several turns of a group counts by its most current
    one for ``now`` and ``change``, by its earliest otherwise."""
    if wants == "now":
        return (min(depths), 0)
    if wants == "change":
        return (0 if new else 1, 0)
    d = max(depths)
    return (d == 0, d if wants == "past" else -d)


# ---------------------------------------------------------------------------------------
# successions the designs recorded


_lock = threading.Lock()
_recorded: dict[tuple[int, str], tuple[tuple[int, str], frozenset[Pair]]] = {}


def recorded(store: Store, namespace: str) -> frozenset[Pair]:
    """The successions of turns the namespace's records state (any design's records
    with ``replaced_by``), kept until the namespace's records change."""
    stamp = store.records_stamp(namespace)
    key = (id(store), namespace)
    with _lock:
        held = _recorded.get(key)
    if held is not None and held[0] == stamp:
        return held[1]
    pairs: set[Pair] = set()
    for kind, cls in sorted(load_kinds().items()):
        if "replaced_by" not in cls.model_fields:
            continue
        records = store.get_records(namespace, kind, builder=None)
        by_id = {r.id: r for r in records}
        for r in records:
            for rid in getattr(r, "replaced_by", None) or []:
                if (later := by_id.get(rid)) is not None:
                    pairs.update(_turn_pairs(r, later))
    found = frozenset(pairs)
    with _lock:
        _recorded[key] = (stamp, found)
    return found


def _turn_pairs(old: Derived, new: Derived) -> list[Pair]:
    """Old record's own turns to the new one's (a turn both cite states neither change)."""
    was = {s.episode for s in old.sources}
    now = {s.episode for s in new.sources}
    return [(o, n) for o in sorted(was - now) for n in sorted(now - was)]


# ---------------------------------------------------------------------------------------
# successions the turns state


def read(store: Store, namespace: str, turns: Sequence[str]) -> list[Statement]:
    """The statements of ``turns``, in conversation order (time, then the order stored);
    in a two-person conversation "you" is the other speaker."""
    people = store.speakers(namespace)
    said = []
    for ep in _in_order(store, namespace, turns):
        other = [p for p in people if p != ep.speaker] if len(people) == 2 else []
        said += statements(
            ep.text,
            source=ep.id,
            at=aware(ep.occurred_at).timestamp() if ep.occurred_at else None,
            speaker=ep.speaker,
            addressee=other[0] if other else None,
        )
    return said


def _in_order(store: Store, namespace: str, turns: Sequence[str]) -> list[Episode]:
    return sorted(
        store.get_episodes(namespace, list(turns)),
        key=lambda e: (aware(e.occurred_at).timestamp() if e.occurred_at else float("inf"), e.seq),
    )


def read_amounts(store: Store, namespace: str, turns: Sequence[str]) -> list[Amount]:
    """The amounts ``turns`` state (:mod:`memstrata.knowledge.quantities`), in
    conversation order."""
    out = []
    for ep in _in_order(store, namespace, turns):
        at = aware(ep.occurred_at).timestamp() if ep.occurred_at else None
        out += amounts(ep.text, source=ep.id, speaker=ep.speaker, at=at)
    return out


def stated_changes(store: Store, namespace: str, turns: Sequence[str]) -> list[Change]:
    """The supersessions the statements of ``turns`` make among themselves
    (:func:`memstrata.knowledge.slots.changes`)."""
    return changes(read(store, namespace, turns))


def stated(store: Store, namespace: str, turns: Sequence[str]) -> list[Pair]:
    """The successions of turns :func:`stated_changes` finds."""
    return [(c.old.source, c.new.source) for c in stated_changes(store, namespace, turns)]


#: the verbs that state a slot of the closed table, beside the slot's own words
_SLOT_VERBS = {
    reader.HOME: {v.split()[-1] if v.startswith("be ") else v for v in reader._HOME_VERBS},
    reader.EMPLOYER: {v.split()[-1] if v.startswith("be ") else v for v in reader._WORK_VERBS},
    reader.JOB: {"work", "job"},
}


def answering(said: Iterable[Statement], asks: Focus) -> list[Statement]:
    """The statements that answer a question asking ``asks``: by one of its subjects, in
    a slot its words name ("Where does Zoë work?": Zoë's ``work at``; "What instrument
    does Jonas play?": Jonas's ``play``), not negated."""
    said = _carried(list(said))
    out = []
    for n, s in enumerate(said):
        if s.negated or s.subject not in asks.subjects:
            continue
        if any(_ends(later, s) for later in said[n + 1 :]):
            continue  # "I've switched from Japanese to Korean": Japanese holds no longer
        words = s.slot.split()
        if s.slot in _SLOT_VERBS:
            named = bool(_SLOT_VERBS[s.slot] & asks.words)
        elif s.slot == reader.HERE:
            # where the speaker says they are answers where they live when nothing
            # better does (asked_lead prefers the home slot)
            named = bool(_SLOT_VERBS[reader.HOME] & asks.words)
        else:
            # the slot's own words, and its preposition among the question's: "What car
            # does she drive?" asks nothing "drive to" states; "monthly" names "month"
            tied = [w for w in words[1:] if w in _PREPOSITIONS]
            content = [w for w in words if w not in _PREPOSITIONS and w != "per"]
            named = says(content, asks.words) and set(tied) <= asks.said
        if named:
            out.append(s)
    return out


def _carried(said: list[Statement]) -> list[Statement]:
    """ "I've switched from Japanese to Korean": the value a turn moves *to*, in the same
    turn as the end of a value the subject held in a slot, is stated in that slot."""
    out = list(said)
    for n, s in enumerate(said):
        words = s.slot.split()
        if s.negated or len(words) != 2 or words[1] != "to":
            continue
        for e in said:
            if e.source != s.source or e.subject != s.subject or e.slot != reader.ENDED:
                continue
            held = [
                o
                for o in said[:n]
                if o.subject == s.subject
                and o.source != s.source
                and o.slot not in (reader.ENDED, s.slot)
                and reader.name_key(o.value) == reader.name_key(e.value)
            ]
            if held:
                o = held[-1]
                out[n] = Statement(s.subject, o.slot, s.value, s.source, s.at, state=o.state)
    return out


#: the prepositions a slot's lemma path may end with ("live near", "drive to"); "per"
#: makes a rate ("km per week") and ties nothing
_PREPOSITIONS = frozenset(
    "in at to from for with on near into onto of by about as over under after".split()
)


def _ends(later: Statement, s: Statement) -> bool:
    """Whether ``later`` ends the value ``s`` states (a negation of it by its subject)."""
    same = reader.name_key(later.value) == reader.name_key(s.value)
    return later.negated and later.subject == s.subject and same


def asked_pairs(wants: Asked, said: Sequence[Statement]) -> list[Pair]:
    """Successions among the turns stating the value a question asks for (``said``, in
    conversation order, from :func:`answering`): each turn after the last one of the same
    subject's slot, when it states another value, whether or not the slot was learned
    to hold one value (the question asks for one); for ``now``, also when it restates
    the same value (the latest says it holds still)."""
    last: dict[tuple[str, str], Statement] = {}
    out: list[Pair] = []
    for s in said:
        before = last.get((s.subject, s.slot))
        if before is not None and before.source != s.source:
            other = reader.name_key(before.value) != reader.name_key(s.value)
            if other or wants == "now":
                out.append((before.source, s.source))
        last[(s.subject, s.slot)] = s
    return out


def asked_lead(wants: Asked, said: Sequence[Statement]) -> tuple[str, str] | None:
    """The answer's first words from the statements that answer the question (``said``,
    in conversation order): the value asked for and the one before or after it
    ("ETH, since July 2024; before that Deltares"), with the turn that states it, in one
    subject's one slot; None without such statements."""
    if not said:
        return None
    slots: dict[tuple[str, str], list[Statement]] = defaultdict(list)
    for s in said:
        slots[(s.subject, s.slot)].append(s)
    # one subject's one slot: any before where the speaker says they are, a state's slot
    # before an action's object ("live in" before "live near"), then the one most turns
    # state
    chosen = max(
        slots.values(),
        key=lambda g: (g[0].slot != reader.HERE, g[0].state, len({s.source for s in g})),
    )
    runs: list[list[Statement]] = []  # consecutive statements of one value
    for s in chosen:
        if runs and reader.name_key(runs[-1][0].value) == reader.name_key(s.value):
            runs[-1].append(s)
        else:
            runs.append([s])
    i = 0 if wants == "first" else len(runs) - 2 if wants == "past" and len(runs) > 1 else -1
    run = runs[i]
    j = i % len(runs)
    value, since = run[0].value, _month(run[0].at)
    turn = run[-1].source if wants == "now" else run[0].source
    if wants in ("now", "change") and j > 0:
        tail = f", since {since}" if since else ""
        return f"{value}{tail}; before that {runs[j - 1][-1].value}.", turn
    if wants in ("past", "first") and j + 1 < len(runs):
        until = _month(runs[j + 1][0].at)
        tail = f", until {until}" if until else ""
        return f"{value}{tail}; then {runs[j + 1][0].value}.", turn
    return f"{value}.", turn


def lead(wants: Asked, found: Iterable[Change], first: str, second: str) -> str | None:
    """The answer's first words when the turn asked for (``first``) and the one shown
    after it (``second``) state a change of one value: "Cardiff, since May 2024; before
    that Bristol" (now, change), "Bristol, until May 2024; then Cardiff" (past, first);
    None when no stated change links them or one side is a value ended, not replaced."""
    for c in found:
        if {c.old.source, c.new.source} != {first, second} or c.new.negated:
            continue
        when = _month(c.new.at)
        if wants in ("now", "change") and c.new.source == first:
            return f"{c.new.value}{f', since {when}' if when else ''}; before that {c.old.value}."
        if wants in ("past", "first") and c.old.source == first:
            return f"{c.old.value}{f', until {when}' if when else ''}; then {c.new.value}."
    return None


def _month(at: float | None) -> str | None:
    return datetime.fromtimestamp(at, tz=UTC).strftime("%B %Y") if at is not None else None


def order_results(
    store: Store,
    namespace: str,
    queries: Sequence[str],
    results: list[list[Hit]],
) -> list[list[Hit]]:
    """Each query's hits in the order its question about time wants (:func:`order`), the
    successions read from the records, from the hits' own turns, among the turns
    stating the value the question asks for (:func:`answering`, :func:`asked_pairs`),
    and among the amounts it asks for (:func:`~memstrata.knowledge.quantities.asked_amounts`)."""
    out = []
    for query, hits in zip(queries, results, strict=True):
        wants = asked(query) if len(hits) > 1 else None
        if wants is None:
            out.append(hits)
            continue
        turns = list(dict.fromkeys(s for h in hits[: window_end(hits)] for s in h.sources))
        said = read(store, namespace, turns)
        about = focus(query, store.speakers(namespace))
        asks = answering(said, about)
        pairs = set(recorded(store, namespace)) | set(asked_pairs(wants, asks))
        pairs |= {(c.old.source, c.new.source) for c in changes(said)}
        if asks_amount(query):
            runs = asked_amounts(about, read_amounts(store, namespace, turns))
            pairs |= set(amount_pairs(wants, runs))
        out.append(order(hits, wants, pairs))
    return out


def succession_of(wants: Asked, pairs: Iterable[Pair], turns: Sequence[str]) -> list[str]:
    """The turns of ``turns`` (best supported first) in the group of successions of the
    best one, in the order ``wants`` asks for; empty when the best turn is in none."""
    known = Successions((o, n) for o, n in pairs if o in turns and n in turns)
    if not turns or turns[0] not in known:
        return []
    group = known.group(turns[0])
    mine = [t for t in dict.fromkeys(turns) if t in known and known.group(t) == group]
    return sorted(mine, key=lambda t: _key(wants, [known.depth(t)], t in known.new))
