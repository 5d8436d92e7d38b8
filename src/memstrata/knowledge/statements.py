"""What a turn states about people: (subject, slot, value) statements read off the
parse (:func:`memstrata.nlp.clauses`), with "I" resolved to the speaker and "you" to
the person addressed.

A statement is a clause whose subject is a person (the speaker, the addressee, "we" as
the speaker's household, or a name) and whose object is a value, stated as holding: in
the present or perfect, or in any past form of a verb that *begins* a state ("moved",
"joined", "bought"). Questions, futures, plans and conditions ("if I move to Leeds")
state nothing, with two exceptions: a question about a place asked of the addressee
("how's Cardiff treating you?") says where the addressee is, and a "still" question
presupposes its state ("why do you still drive to Henkel?"). A light verb ("do", "get",
"make", ...) names no relation.

The slot is the predicate's lemma path ("play", "drive", "learn"), normalised where
English has several verbs for one relation, by a closed table of lemma classes (not of
phrasings): a verb of dwelling or of moving, with "in" / "to" and a place, is the home
slot ``live in``; a verb of working or joining, with an organisation, is ``work at``;
"be a nurse at St Mary's" and "start as a nurse" give the ``job`` and the employer.
Indirect statements come from possessed nouns: "my new boss at Vattenfall" (a noun of
the workplace, "at" an organisation) says where the owner works, "my flat in Leeds"
(a noun of the dwelling) where the owner lives, and "my rent is £950" / "our car is a
Škoda" state the owner's ``rent`` and ``car``; "my Polo" is a name the owner has
(``have``). A rate is a value whatever the verb ("I ride 80 km a week", "I'm doing 150
km a week": slot ``km per week``; money is one unit); "here in Zürich" is where the
speaker is (``be in``), not the home.

A negated clause ("I no longer play the cello") gives a ``negated`` statement that ends
the value in its slot; a verb that ends a state ("I quit Deltares", "gave up the cello",
"sold the Polo", "switched from Japanese") one that ends it whatever slot held it
(slot :data:`ENDED`; :mod:`memstrata.knowledge.slots`).

Which slots hold one value at a time is not decided here: the slots module learns it
from the statements themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memstrata.nlp import Clause, analyse, clauses, fold, name_key

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

#: characters of the longest text read for statements (a long chat turn is under 2,000)
LONGEST = 20_000

HOME = "live in"
EMPLOYER = "work at"
JOB = "job"
#: a named thing owned ("my Polo")
HAS = "have"
#: where the speaker says they are ("here in Zürich")
HERE = "be in"
#: the slot of a statement that ends a value whatever slot held it ("I quit Deltares")
ENDED = ""

#: verbs of dwelling and of moving (lemma -> the prepositions that name the place)
_HOME_VERBS = {
    "live": ("in", "at"),
    "reside": ("in", "at"),
    "settle": ("in",),
    "move": ("to", "into"),
    "relocate": ("to",),
    "be posted": ("to",),
    "be transferred": ("to",),
    "be relocated": ("to",),
}
#: verbs of working and joining (lemma -> prepositions; "" is a direct object)
_WORK_VERBS = {
    "work": ("at", "for", "with", "in"),
    "earn": ("at",),
    "join": ("",),
    "start": ("at", "with"),
    "be employ": ("at", "by"),
    "be hire": ("at", "by"),
}
#: nouns of the dwelling and of the workplace: "my X in/at Y" places their owner
_DWELLING = frozenset(
    "flat apartment house home room place balcony garden neighbour neighbourhood landlord "
    "street building studio".split()
)
_WORKPLACE = frozenset(
    "boss colleague coworker office job manager team lab employer company desk position "
    "post role contract payslip supervisor department firm".split()
)
#: verbs whose past form begins a state that holds on ("I moved", "I joined", "I bought")
_BEGINS = frozenset(
    "move relocate settle join start become switch buy get find take land begin adopt "
    "marry rent hire employ post transfer".split()
)
#: light verbs: their object, not the verb, carries the meaning
_LIGHT = frozenset("do get make take go have give put keep".split())
#: verbs that end a state: their object no longer holds for the subject
_ENDS = frozenset(
    {"quit", "leave", "sell", "stop", "drop", "end", "give up", "resign from", "switch from"}
)
#: words that make a present clause a condition, not a statement
_CONDITIONS = frozenset({"if", "unless", "when", "whenever", "once"})
#: adjectives that date a thing rather than name its kind ("my new car" is a car)
_TIMELY = frozenset("new old current former previous present latest last next".split())
_PERIODS = frozenset({"day", "week", "month", "year", "hour", "night"})
_PLACE = frozenset({"GPE", "LOC", "FAC"})
_NOT_VALUE = frozenset({"DATE", "TIME", "PERCENT", "ORDINAL"})
_PLURAL_FIRST = frozenset({"we", "us", "our", "ours"})
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Statement:
    """That ``subject`` (a :func:`~memstrata.nlp.name_key`) holds ``value`` in ``slot``,
    as turn ``source`` said at ``at``; ``negated``: that it holds no longer."""

    subject: str
    slot: str
    value: str
    source: str
    at: float | None
    negated: bool = False
    #: read as a state (a class of the closed table, a copula, a quantity), not as the
    #: object of an action verb: :mod:`memstrata.knowledge.slots` asks less evidence
    state: bool = False


def statements(
    text: str,
    *,
    source: str,
    at: float | None = None,
    speaker: str | None = None,
    addressee: str | None = None,
) -> list[Statement]:
    """The statements of one turn, in order, each once (see the module). A text longer
    than :data:`LONGEST` is a document, not a turn of talk: it states nothing here (the
    parse's phrase lookups grow with the text's length, so a whole book would cost the
    square of its length)."""
    if len(text) > LONGEST:
        return []
    found = clauses(text, speaker, addressee)
    (doc,) = analyse([text])
    if not doc.has_annotation("DEP"):
        return []  # no parse: the multilingual tokenizer's text
    reader = _Reader(doc, source, at, speaker, addressee)
    for c in found:
        reader.clause(c)
    reader.possessed()
    reader.rates()
    return list(dict.fromkeys(reader.out))


class _Reader:
    def __init__(
        self, doc: Doc, source: str, at: float | None, speaker: str | None, addressee: str | None
    ) -> None:
        self.doc = doc
        self.source = source
        self.at = at
        self.speaker = speaker
        self.addressee = addressee
        self.people = {name_key(p) for p in (speaker, addressee) if p}
        self.out: list[Statement] = []

    # -- helpers ------------------------------------------------------------------------
    def add(
        self, subject: str, slot: str, value: str, negated: bool = False, state: bool = True
    ) -> None:
        value = value.strip(" ,.;:!?\"'")
        if subject and value and name_key(value) != subject:
            self.out.append(Statement(subject, slot, value, self.source, self.at, negated, state))

    def token(self, span: tuple[int, int] | None) -> Token | None:
        if span is None:
            return None
        t = self.doc.char_span(span[0], span[1], alignment_mode="expand")
        return t.root if t is not None and len(t) else None

    def person(self, c: Clause, tok: Token | None) -> str:
        """The subject's key when the subject is a person, else ""."""
        low = fold(c.subject)
        if low in _PLURAL_FIRST and self.speaker:
            return name_key(self.speaker)
        key = name_key(c.subject)
        if key in self.people:
            return key
        if tok is not None and tok.pos_ == "PROPN" and tok.ent_type_ in ("PERSON", ""):
            return key  # a name, not a place's or an organisation's
        return ""

    # -- clauses ------------------------------------------------------------------------
    def clause(self, c: Clause) -> None:
        verb = self.token(c.verb_span)
        obj = self.token(c.object_span)
        still = verb is not None and any(x.lower_ == "still" for x in verb.children)
        if c.question and not still:  # "why do you still drive to Henkel?" presupposes it
            self.asked(c, obj)
            return
        if c.owner and not self.person(c, self.token(c.subject_span)):
            self.attribute(c, obj)
            return
        who = self.person(c, self.token(c.subject_span))
        if not who and verb is not None and self.speaker:
            # a second subject the parse gave the verb ("Big news: I left Henkel!")
            mine = any(x.dep_ == "nsubj" and fold(x.text) in ("i", "we") for x in verb.children)
            who = name_key(self.speaker) if mine else ""
        if not who or obj is None or verb is None or c.tense == "future":
            return
        if c.tense == "present" and any(
            x.dep_ in ("mark", "advmod") and fold(x.text) in _CONDITIONS for x in verb.children
        ):
            return  # "if I move to Cardiff", "when I can play more than three notes"
        if obj.pos_ == "PRON" and fold(c.object) not in self.people:
            return
        lemma = c.predicate.split()
        head = " ".join(lemma[:2]) if lemma[0] == "be" and len(lemma) > 1 else lemma[0]
        begins = head in _BEGINS or fold(verb.lemma_) in _BEGINS
        ends = any(c.predicate == e or c.predicate.startswith(e + " ") for e in _ENDS)
        if c.tense == "past" and not (begins or ends):
            return  # an event, or a value that held then: not what holds now
        if c.object_head and obj.ent_type_ in _NOT_VALUE and not _DIGIT.search(c.object):
            return
        if ends and not c.negated:
            self.add(who, ENDED, c.object, negated=True)
            return
        slot = self.slot(c, head, obj)
        if slot:
            state = slot in (HOME, EMPLOYER, JOB) or slot != c.predicate
            self.add(who, slot, c.object, negated=c.negated, state=state)

    def slot(self, c: Clause, head: str, obj: Token) -> str:
        """The clause's slot: a class of the closed table, a quantity's unit, or the
        predicate's lemma path."""
        words = c.predicate.split()
        prep = words[-1] if len(words) > 1 else ""
        # a verb of dwelling says its object is a place, whatever entity label the small
        # model gives it ("moved to Lancaster" is often an ORG)
        place = obj.ent_type_ in _PLACE or (obj.pos_ == "PROPN" and obj.ent_type_ != "PERSON")
        org = obj.pos_ == "PROPN" or obj.ent_type_ == "ORG"
        if head in _HOME_VERBS and prep in _HOME_VERBS[head] and place:
            return HOME
        if head in _WORK_VERBS and (prep if len(words) > 1 else "") in _WORK_VERBS[head] and org:
            return EMPLOYER
        if len(words) == 3 and words[1] in _DWELLING and prep in ("in", "at") and place:
            return HOME  # "found a flat in Leeds"
        if len(words) == 2 and prep in ("in", "at") and place and head in _BEGINS:
            # the parse may hang the place on the verb: "found [a flat] [in Leeds]"
            verb = obj.head.head
            if any(d.dep_ == "dobj" and fold(d.lemma_) in _DWELLING for d in verb.children):
                return HOME
        if len(words) == 3 and words[1] in _WORKPLACE | {"as"} and prep in ("at", "with", "for"):
            return EMPLOYER if obj.pos_ == "PROPN" or obj.ent_type_ == "ORG" else ""
        if words[0] == "be" and len(words) == 3 and prep in ("at", "for"):
            return EMPLOYER if obj.ent_type_ == "ORG" else ""  # "is a nurse at St Mary's"
        if words == ["start", "as"] or words == ["work", "as"]:
            return JOB
        if words == ["be"]:
            # "a nurse", "the junior architect": a singular noun with an article ("I'm
            # coeliac" is no job)
            det = any(d.dep_ == "det" for d in obj.children)
            return JOB if obj.tag_ == "NN" and obj.dep_ == "attr" and det else ""
        if words[0] == "be":
            return ""  # "is great", "was at the office until 11": a state of the moment
        if _DIGIT.search(c.object):
            return self.quantity(c, obj)
        if obj.pos_ not in ("NOUN", "PROPN") or words[0] in _LIGHT:
            return ""  # a light verb names no relation: "do a course", "get a paper"
        return c.predicate

    def quantity(self, c: Clause, obj: Token) -> str:
        """A quantity without a period ("deadlifted 70 kg"): the predicate and the unit.
        One with a period is a rate, read by :meth:`rates` whatever the verb."""
        if period(obj):
            return ""
        unit = fold(obj.lemma_) if not _DIGIT.search(obj.text) else ""
        return " ".join(p for p in (c.predicate, unit) if p)

    def rates(self) -> None:
        """ "I ride about 80 km a week", "I'm doing 150 km a week now", "we pay 18,000 Kč
        a month", "I do two hours a week": the speaker's ``<unit> per <period>`` (money
        is one unit, whatever the currency), whatever the verb."""
        if not self.speaker:
            return
        for t in self.doc:
            if not t.like_num:
                continue
            m = t.head if t.dep_ in ("nummod", "compound", "quantmod") else t
            every = period(m)
            if not every or not self._first_person(m):
                continue
            # the unit is the word the number counts, whatever its tag ("Kč" may be read
            # as an interjection); a date or a time is no rate
            named = m.i != t.i and fold(m.lemma_) != every and m.pos_ != "VERB"
            unit = "money" if m.ent_type_ == "MONEY" else fold(m.lemma_) if named else ""
            if not unit:
                continue
            at = {t.i, m.i}
            at |= {c.i for c in m.children if c.dep_ in ("nummod", "quantmod")}
            at |= {c.i for c in (*m.children, *t.children) if c.pos_ == "SYM"}  # "£"
            value = self.doc[min(at) : max(at) + 1].text
            self.add(name_key(self.speaker), f"{unit} per {every}", value)

    def _first_person(self, t: Token) -> bool:
        """Whether the clause ``t`` belongs to has "I" or "we" (or "my", "our") as its
        subject."""
        v = t
        while v.head.i != v.i and v.pos_ not in ("VERB", "AUX"):
            v = v.head
        for c in v.children:
            if c.dep_ in ("nsubj", "nsubjpass"):
                heads = [c, *(x for x in c.children if x.dep_ in ("conj", "poss"))]
                return any(fold(x.text) in ("i", "we", "my", "our") for x in heads)
        return False

    def asked(self, c: Clause, obj: Token | None) -> None:
        """A present question about a place, to the addressee ("how's Cardiff treating
        you?", "how is Leeds?"), says the addressee is there."""
        subj = self.token(c.subject_span)
        if subj is None or not self.addressee or c.tense != "present":
            return
        to_you = obj is None or name_key(c.object) == name_key(self.addressee)
        place = subj.ent_type_ == "GPE" or (
            subj.pos_ == "PROPN" and not subj.ent_type_ and obj is not None
        )
        if place and to_you:
            self.add(name_key(self.addressee), HOME, c.subject)

    def attribute(self, c: Clause, obj: Token | None) -> None:
        """ "My rent is £950", "our new car is a Škoda": the owner's ``rent``, ``car``."""
        subj = self.token(c.subject_span)
        if c.predicate != "be" or obj is None or subj is None or c.tense == "future":
            return
        words = [
            fold(t.lemma_)
            for t in subj.subtree
            if t.i <= subj.i
            and (t.i == subj.i or t.dep_ in ("compound", "amod"))
            and fold(t.lemma_) not in _TIMELY
        ]
        slot = " ".join(words) or fold(subj.lemma_)
        # the small model tags unknown nouns as adjectives ("is lasagne"): a qualified
        # attribute ("favourite food") takes them, a bare one ("my boss is great") is a
        # judgement, not a value
        noun = obj.pos_ in ("NOUN", "PROPN", "NUM") or bool(_DIGIT.search(c.object))
        if not noun and not (obj.pos_ == "ADJ" and len(words) > 1):
            return
        owner = name_key(c.owner)
        self.add(owner, slot, c.object, negated=c.negated)

    # -- possessed nouns ----------------------------------------------------------------
    def possessed(self) -> None:
        """ "My new boss at Vestas", "my flat in Ancoats": the owner works or lives
        there. "Here in Utrecht" says where the speaker is (slot :data:`HERE`, not the
        home: "here" may be a district of the home, or a visit), asked or not. "My Polo"
        (a name owned, not a person's) is something the owner has (:data:`HAS`), until
        they sell it."""
        for t in self.doc:
            if t.dep_ == "poss" and t.head.pos_ == "PROPN" and t.head.ent_type_ != "PERSON":
                owner = self.owner(t.head)
                if owner and not t.head.sent.text.rstrip().endswith("?"):
                    self.add(owner, HAS, _phrase(t.head), state=False)
        for t in self.doc:
            if t.dep_ == "prep" and t.lower_ == "as" and t.head.pos_ == "NOUN":
                self.role(t)
            if t.dep_ != "prep" or t.lower_ not in ("at", "in", "for"):
                continue
            noun = t.head
            owner = self.owner(noun)
            if not owner:
                continue
            here = noun.lower_ == "here"
            if noun.sent.text.rstrip().endswith("?") and not here:
                continue
            for o in (x for x in t.children if x.dep_ == "pobj"):
                name = _name(o)
                if not name:
                    continue
                lemma = fold(noun.lemma_)
                role = _is_speaker(noun) and noun.pos_ == "NOUN"
                if (
                    (lemma in _WORKPLACE or role)
                    and t.lower_ in ("at", "for")
                    and o.ent_type_ != "GPE"
                ):
                    self.add(owner, EMPLOYER, name)
                    if role:
                        self.add(owner, JOB, _phrase(noun))
                elif (
                    (lemma in _DWELLING or here)
                    and t.lower_ == "in"
                    and (o.ent_type_ in _PLACE or o.pos_ == "PROPN")
                ):
                    self.add(owner, HERE if here else HOME, name)

    def role(self, as_: Token) -> None:
        """ "My first day as in-house counsel at Ege Lojistik": a role at an organisation,
        on a noun the speaker owns, is the speaker's job and employer."""
        owner = self.owner(as_.head)
        if not owner or as_.sent.text.rstrip().endswith("?"):
            return
        for role in (x for x in as_.children if x.dep_ == "pobj" and x.pos_ == "NOUN"):
            for at in (p for p in role.children if p.dep_ == "prep" and p.lower_ in ("at", "for")):
                for o in (x for x in at.children if x.dep_ == "pobj"):
                    if name := _name(o):
                        self.add(owner, JOB, _phrase(role))
                        self.add(owner, EMPLOYER, name)

    def owner(self, noun: Token) -> str:
        if noun.lower_ == "here" and self.speaker:
            return name_key(self.speaker)
        for c in noun.children:
            if c.dep_ != "poss":
                continue
            low = fold(c.text)
            if low in ("my", "our") and self.speaker:
                return name_key(self.speaker)
            if low == "your" and self.addressee:
                return name_key(self.addressee)
        if not self.speaker:
            return ""
        if _is_speaker(noun) or (fold(noun.lemma_) in _DWELLING and self._first_person(noun)):
            return name_key(self.speaker)  # "I'm Tomáš, head brewer at ..."; "we rent a flat in"
        return ""


def _is_speaker(noun: Token) -> bool:
    """Whether ``noun`` names the speaker: the complement of "I'm", or set beside it
    ("I'm Tomáš, head brewer at ...")."""
    t = noun.head if noun.dep_ == "appos" else noun
    if t.dep_ != "attr" or t.head.lemma_ != "be":
        return False
    return any(c.dep_ == "nsubj" and fold(c.text) == "i" for c in t.head.children)


def _phrase(t: Token) -> str:
    """A noun with its compounds and adjectives ("head brewer"; "Škoda Fabia", the
    "old" of "my old Škoda Fabia" off)."""
    left = [
        c
        for c in t.children
        if c.dep_ in ("compound", "amod") and c.i < t.i and fold(c.lemma_) not in _TIMELY
    ]
    return " ".join(x.text for x in [*left, t])


def period(m: Token) -> str:
    """The period of a rate ("a week", "per month", "every day") attached to ``m``, its
    head or its head's other dependents; "" when none."""
    v = m
    while v.head.i != v.i and v.pos_ not in ("VERB", "AUX"):
        v = v.head
    near = [*m.children, *m.head.children, *v.children]
    for p in near:
        rate = any(fold(d.text) in ("a", "an", "per", "every", "each") for d in p.children)
        if fold(p.lemma_) in _PERIODS and p.i != m.i and rate:
            return fold(p.lemma_)
        if p.lower_ in ("per", "a", "every") and p.dep_ == "prep":
            for o in p.children:
                if fold(o.lemma_) in _PERIODS:
                    return fold(o.lemma_)
    return ""


def _name(t: Token) -> str:
    """The proper name ``t`` heads (its compounds and its whole entity), else ""."""
    if t.pos_ != "PROPN":
        return ""
    if t.ent_iob_ != "O":
        ent = next((e for e in t.doc.ents if e.start <= t.i < e.end), None)
        if ent is not None:
            return " ".join(x.text for x in ent if x.pos_ != "DET")
    left = [c for c in t.children if c.dep_ == "compound" and c.i < t.i]
    return " ".join(x.text for x in [*left, t])
