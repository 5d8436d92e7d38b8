"""The heuristic tier's outdated knowledge: a later statement of a new value in a slot
that holds one value at a time retires the earlier triplets (the llm tier asks the
model, appendix B).

What a turn states, and which slots hold one value, come from
:mod:`memstrata.knowledge` (the parse and its lemmas, and the statements themselves; no
list of phrasings): "Maya lives in Porto", "I moved to Cardiff", "my new boss at
Vattenfall", "how's Cardiff treating you?" asked of Jonas, "my rent is now £950". A
statement's triplets are those of its turn with its subject and its value as object
(the extraction's "Maya lives in Lisbon"); a statement the extraction did not make a
triplet of gets its own, ``subject slot value`` ("Jonas work at Vattenfall"; a negated
one "Jonas no longer play cello").

After every batch the statements of all the turns the namespace's triplets cite are
ordered by time and compared (:func:`memstrata.knowledge.slots.changes`): a triplet of a
superseded statement gets ``invalid_at`` (the later turn's time) and ``replaced_by``
(the later statement's triplet), leaves the traversal graph and stays in the store.
Deleting or correcting the later turn takes its triplet away, and the repair makes the
earlier one current again (:mod:`memstrata.designs.personalai.repair`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from memstrata.designs.personalai.graph import PAGraph, name_key
from memstrata.engine.removal import episodes_by_id
from memstrata.knowledge.slots import same_value
from memstrata.knowledge.statements import Statement
from memstrata.knowledge.turns import reader_for, supersessions
from memstrata.models import Entity, Episode, Fact, Span
from memstrata.nlp import fold

MakeObject = Callable[[str, Span], Entity]
MakeTriplet = Callable[[Entity, str, Entity, Span, "datetime | None"], Fact]


def relation(s: Statement) -> str:
    """A statement's own triplet relation: its slot; "no longer" before a negated one's."""
    return f"no longer {s.slot}".strip() if s.negated else s.slot


class Outdated:
    """Applies the rule above to one namespace's graph after a batch."""

    def __init__(self, graph: PAGraph, make_object: MakeObject, make_triplet: MakeTriplet) -> None:
        self.graph = graph
        self.make_object = make_object
        self.make_triplet = make_triplet
        self.reader = reader_for(graph)
        self.replaced = 0

    def apply(self, batch: list[Episode]) -> None:
        g = self.graph
        said = self.reader.read(batch)
        for ep in batch:
            for s in said[ep.id]:
                if not self.records(s):
                    self._own(ep, s)
        cited = {sp.episode for f in g.triplets.values() for sp in f.sources}
        have = {ep.id for ep in batch}
        known = self.reader.known(cited - have)
        stored = episodes_by_id(g.store, g.namespace, sorted(cited - have - set(known)))
        turns = [*batch, *stored.values()]
        said = {**known, **self.reader.read(turns)}
        for change in supersessions(self.reader.in_order(said)):
            news = self.records(change.new)
            if not news:
                continue
            for old in self.records(change.old):
                if old.invalid_at is None and old.id not in {n.id for n in news}:
                    g.retire(old, news[0].id, self.reader.when(change.new.source))
                    self.replaced += 1

    def records(self, s: Statement) -> list[Fact]:
        """The triplets of ``s``'s turn with its subject and its value."""
        g = self.graph
        subject = g.by_name.get(name_key(s.subject))
        if subject is None:
            return []
        out = []
        for fid in sorted(g.triplets_of.get(subject, ())):
            f = g.triplets.get(fid)
            if (
                f is not None
                and f.subject_id == subject
                and any(sp.episode == s.source for sp in f.sources)
                and f.object_id in g.objects
                and same_value(g.objects[f.object_id].name, s.value)
                and f.relation.startswith("no longer") == s.negated
            ):
                out.append(f)
        return out

    def _own(self, ep: Episode, s: Statement) -> None:
        """A triplet of ``s`` the extraction did not make."""
        whole = Span(episode=ep.id, start=0, end=len(ep.text))
        at = fold(ep.text).find(fold(s.value))
        span = Span(episode=ep.id, start=at, end=at + len(s.value)) if at >= 0 else whole
        subj = self.make_object(_display(ep, s.subject), whole)
        obj = self.make_object(s.value, span)
        if subj.id != obj.id:
            self.make_triplet(subj, relation(s), obj, whole, ep.occurred_at)


def _display(ep: Episode, key: str) -> str:
    """The subject as written: the turn's speaker's name when the key is theirs."""
    if ep.speaker and name_key(ep.speaker) == key:
        return ep.speaker
    at = fold(ep.text).find(key)
    return ep.text[at : at + len(key)] if at >= 0 else key.title()


__all__ = ["Outdated", "relation"]
