"""The heuristic tier's supersession: a later statement of a new value in a slot that
holds one value at a time makes the earlier fact invalid (Graphiti's edge invalidation,
which the paper's llm tier does with its contradiction prompt).

What a turn states, and which slots hold one value, come from
:mod:`memstrata.knowledge` (the parse and its lemmas, and the statements themselves; no
list of phrasings): "I moved to Cardiff", "my new boss at Vattenfall", "how's Cardiff
treating you?" asked of Jonas, "my rent is now £950". A sentence stating something is a
fact whose relation is the slot, whose subject is the person the statement is about and
whose object is the entity it names (the value's own, or the sentence's other one: a
rent of £950 is a fact about the entity "rent"); a question or a sentence naming one
entity is a fact too when it states something.

After every batch the statements of all the turns the namespace's stated facts cite are
ordered by time and compared (:func:`memstrata.knowledge.slots.changes`): a fact of a
superseded statement gets ``invalid_at`` (the later turn's time) and ``replaced_by``
(the later statement's fact), and keeps its row. A turn that arrives late is compared
the same way, so it is the one superseded when a later value is known. Deleting or
correcting the later turn takes its fact away, and the repair makes the earlier fact
current again (:mod:`memstrata.designs.mnemis.repair`).
"""

from __future__ import annotations

from collections.abc import Iterable

from memstrata.designs.mnemis.extract import Mention, SentenceMentions, name_key
from memstrata.designs.mnemis.graph import Graph
from memstrata.engine.removal import episodes_by_id
from memstrata.knowledge.slots import same_value
from memstrata.knowledge.statements import ENDED, Statement
from memstrata.knowledge.turns import reader_for, supersessions
from memstrata.models import Episode, Fact, aware
from memstrata.nlp import fold

#: the relation of a fact that only names two entities in one sentence
MENTIONED = "mentioned together"


def relation(s: Statement) -> str:
    """The relation of a fact stating ``s``: its slot; "no longer" a negated one's."""
    if s.negated:
        return f"no longer {s.slot}".strip()
    return s.slot or ENDED


def stated_in(
    sentence: str, said: Iterable[Statement], mentions: list[Mention], ids: dict[int, str], g: Graph
) -> tuple[str, str, str] | None:
    """(relation, subject id, object id) of the first statement whose value the
    sentence holds, with the subject a known entity; None when it states none."""
    low = fold(sentence)
    for s in sorted(said, key=lambda s: not s.state):  # a state before an action's object
        if fold(s.value) not in low:
            continue
        subject = g.by_key.get(name_key(s.subject))
        if subject is None:
            continue
        others = [ids[n] for n in range(len(mentions)) if n in ids and ids[n] != subject]
        named = [
            ids[n]
            for n, m in enumerate(mentions)
            if n in ids and ids[n] != subject and same_value(m.name, s.value)
        ]
        if named or others:
            return relation(s), subject, (named or others)[0]
    return None


def value_mentions(text: str, sents: list[SentenceMentions], said: list[Statement]) -> None:
    """A sentence stating a value it names no entity for, beside its subject ("I run 40
    km a week"), gets the value as a mention of its own, so the statement has a fact."""
    low = fold(text)
    for st in said:
        at = low.find(fold(st.value))
        if at < 0:
            continue
        for sent in sents:
            if not sent.start <= at < sent.end:
                continue
            others = [m for m in sent.mentions if name_key(m.name) != name_key(st.subject)]
            if not others:
                end = at + len(st.value)
                sent.mentions.append(Mention(text[at:end], at, end))
                sent.mentions.sort(key=lambda m: m.start)


class Supersession:
    """Applies the rule above to one namespace's graph after each batch."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.reader = reader_for(graph)

    def said(self, episodes: list[Episode]) -> dict[str, list[Statement]]:
        return self.reader.read(episodes)

    def apply(self, batch: list[Episode]) -> list[Fact]:
        """Supersede what the namespace's statements show changed; returns the facts
        changed."""
        g = self.graph
        cited = {
            s.episode
            for f in g.facts.values()
            if f.relation != MENTIONED and f.relation
            for s in f.sources
        }
        have = {ep.id for ep in batch}
        known = self.reader.known(cited - have)
        stored = episodes_by_id(g.store, g.namespace, sorted(cited - have - set(known)))
        turns = [ep for ep in batch if ep.id in cited] + list(stored.values())
        said = {**known, **self.reader.read(turns)}
        changed: list[Fact] = []
        for change in supersessions(self.reader.in_order(said)):
            news = self.records(change.new)
            if not news:
                continue
            at = self.reader.when(change.new.source)
            for old in self.records(change.old):
                if old.id in {n.id for n in news} or news[0].id in old.replaced_by:
                    continue
                # a sentence stating two things is superseded on each count; it ended
                # when the first of them did
                if old.invalid_at is None or aware(at) < aware(old.invalid_at):
                    old.invalid_at = at
                old.replaced_by = [*old.replaced_by, news[0].id]
                changed.append(old)
        return changed

    def records(self, s: Statement) -> list[Fact]:
        """The facts stating ``s``: stated facts (a sentence is one fact, whatever it
        states first) cited in its turn, of its subject, holding its value."""
        g = self.graph
        subject = g.by_key.get(name_key(s.subject))
        if subject is None:
            return []
        value = fold(s.value)
        out = []
        for fid in sorted(g.facts_of.get(subject, ())):
            f = g.facts.get(fid)
            if (
                f is not None
                and f.subject_id == subject
                and f.relation != MENTIONED
                and any(sp.episode == s.source for sp in f.sources)
                and value in fold(f.fact)
            ):
                out.append(f)
        return out


__all__ = ["MENTIONED", "Supersession", "relation", "stated_in"]
