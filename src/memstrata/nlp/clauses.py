"""Who did what: the clauses of a text as (subject, predicate, object), read off the
dependency parse (:func:`clauses`).

One :class:`Clause` per predicate and object: a verb (or a copula) with its subject
(``nsubj``, ``nsubjpass``; a conjoined verb, an ``xcomp`` and a participle clause share
their head's subject; a relative clause's "who" is the noun it describes) and each of
its objects: a direct object, an attribute or complement ("is *a nurse*", "is
*great*"), a quantity ("run *30 km*"), a preposition's object ("live *in* Cardiff"
gives the predicate ``live in``), and a preposition on the object ("started a new job
*at* Vattenfall" gives ``start job at`` Vattenfall); objects joined by "and" each make
one. A verb without object makes one clause with ``object`` empty, unless its only
complement is another verb ("want to move": that verb's clause says it).

* **predicate**: the verb's lemma, its particle ("give up"), the preposition; ``be``
  for a copula; a passive is ``be`` and the participle ("be called").
* **subject / object**: the phrase as written (determiners off; "the viola" is
  ``viola``), pronouns resolved: "I", "me", "my" are the turn's speaker, "you" the
  person addressed, when the caller knows them ("my new boss" is ``Jonas's new boss``,
  its ``owner`` Jonas), and so is the "who" of "guess who's ..."; any other pronoun
  stays as written (``she``, ``it``, ``we``).
* **negated**: a negation on the verb or the verb it depends on ("not", "n't",
  "never", "no longer").
* **tense**: ``future`` (will, shall, going to), ``past`` (a past form, "used to"),
  ``perfect`` (have + participle: "I've moved"), ``present`` otherwise.
* **question**: the sentence ends with a question mark (it states nothing).

Text the English pipeline does not read (:func:`memstrata.nlp.pipeline.is_english`)
has no clauses: the multilingual tokenizer has no parser.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from memstrata.nlp.names import NAME_LABELS
from memstrata.nlp.pipeline import analyse
from memstrata.nlp.script import fold

if TYPE_CHECKING:
    from spacy.tokens import Token

FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
SECOND_PERSON = frozenset({"you", "your", "yours", "yourself"})
_SUBJECT = frozenset({"nsubj", "nsubjpass", "csubj"})
_OBJECT = frozenset({"dobj", "obj", "attr", "oprd", "acomp", "dative"})
_INHERITS = frozenset({"conj", "xcomp", "advcl", "ccomp", "pcomp"})
_PREDICATE_DEPS = frozenset({"ROOT", "conj", "ccomp", "xcomp", "advcl", "relcl", "pcomp"})
_RELATIVE = frozenset({"who", "that", "which", "whom"})
_FUTURE = frozenset({"will", "'ll", "shall", "wo", "’ll"})
_PHRASE_DEPS = frozenset({"compound", "amod", "poss", "nummod", "flat", "nmod", "quantmod"})


@dataclass(frozen=True)
class Clause:
    """One predicate and one object of a sentence (see the module's description)."""

    subject: str
    predicate: str
    object: str
    negated: bool
    tense: str
    question: bool
    #: character spans in the text: the sentence, the subject's words (a pronoun's
    #: own), the object's (None without object) and the verb
    sentence: tuple[int, int]
    subject_span: tuple[int, int]
    object_span: tuple[int, int] | None
    verb_span: tuple[int, int]
    #: the lemma of the subject's and the object's head word ("boss" in "my new boss"),
    #: or the resolved name of a pronoun
    subject_head: str = ""
    object_head: str = ""
    #: whose the subject is when a possessive names a person ("my boss": the speaker)
    owner: str = ""


def clauses(text: str, speaker: str | None = None, addressee: str | None = None) -> list[Clause]:
    """The clauses of ``text``, in the order of their verbs (see the module). ``speaker``
    stands for "I", ``addressee`` for "you"."""
    return list(_clauses(text, speaker, addressee))


@lru_cache(maxsize=8192)
def _clauses(text: str, speaker: str | None, addressee: str | None) -> tuple[Clause, ...]:
    """Cached: facts, triplets and statements read the same turns."""
    (doc,) = analyse([text])
    if not doc.has_annotation("DEP"):
        return ()
    who = _Resolver(speaker, addressee)
    out: list[Clause] = []
    for sent in doc.sents:
        question = sent.text.rstrip().endswith("?")
        span = (sent.start_char, sent.end_char)
        for v in sent:
            if not _predicate(v):
                continue
            subj = _subject(v)
            if subj is None:
                continue
            base = _base(v)
            if not base:
                continue  # a verb the model could not lemmatise ("’" from "that’s")
            common: dict[str, Any] = {
                "negated": _negated(v),
                "tense": _tense(v),
                "question": question,
                "sentence": span,
                "verb_span": (v.idx, v.idx + len(v.text)),
            }
            s_text, s_span, s_head, owner = who.phrase(subj)
            found = False
            for predicate, obj in _objects(v, base):
                o_text, o_span, o_head, _ = who.phrase(obj)
                if not o_text:
                    continue
                found = True
                out.append(
                    Clause(
                        s_text,
                        predicate,
                        o_text,
                        subject_span=s_span,
                        object_span=o_span,
                        subject_head=s_head,
                        object_head=o_head,
                        owner=owner,
                        **common,
                    )  # fmt: skip
                )
            if not found and not any(c.dep_ == "xcomp" for c in v.children):
                out.append(
                    Clause(
                        s_text,
                        base,
                        "",
                        subject_span=s_span,
                        object_span=None,
                        subject_head=s_head,
                        owner=owner,
                        **common,
                    )  # fmt: skip
                )
    return tuple(out)


def _predicate(v: Token) -> bool:
    if v.pos_ == "VERB":
        return v.dep_ not in ("aux", "auxpass", "amod", "compound")
    if v.pos_ == "AUX" and v.lemma_ == "be":  # a copula: "is a nurse", "'m into hiking"
        return v.dep_ in _PREDICATE_DEPS
    return False


def _subject(v: Token) -> Token | None:
    for c in v.children:
        if c.dep_ in _SUBJECT:
            if fold(c.text) in _RELATIVE and v.dep_ == "relcl":
                return v.head  # "the guy who works at Škoda": the guy
            return c
    if any(c.dep_ == "expl" for c in v.children):
        return None  # "there's a lot of places": no one is a lot
    if v.dep_ in _INHERITS and v.head.i != v.i and _predicate(v.head):
        return _subject(v.head)
    return None


def _base(v: Token) -> str:
    passive = any(c.dep_ == "auxpass" for c in v.children)
    head = f"be {v.lower_}" if passive else fold(v.lemma_)
    if not head.strip("'"):
        return ""
    parts = [fold(c.text) for c in v.children if c.dep_ == "prt"]
    return " ".join([head, *parts])


def _objects(v: Token, base: str) -> list[tuple[str, Token]]:
    out: list[tuple[str, Token]] = []
    for c in v.children:
        if c.dep_ in _OBJECT:
            for o in _and(c):
                out.append((base, o))
                for p in o.children:  # "a new job at Vattenfall", "a nurse at St Mary's"
                    if p.dep_ == "prep":
                        out += [(f"{base} {fold(o.lemma_)} {p.lower_}", x) for x in _pobj(p)]
        elif c.dep_ in ("prep", "agent"):
            out += [(f"{base} {c.lower_}", x) for x in _pobj(c)]
        elif c.dep_ == "npadvmod" and any(g.dep_ == "nummod" for g in c.children):
            out.append((base, c))  # "run 30 km a week"
    return out


def _pobj(p: Token) -> list[Token]:
    return [x for c in p.children if c.dep_ in ("pobj", "pcomp") for x in _and(c)]


def _and(t: Token) -> list[Token]:
    """``t`` and the words joined to it by "and" / "or"."""
    out = [t]
    for c in t.children:
        if c.dep_ == "conj":
            out += _and(c)
    return out


def _negated(v: Token) -> bool:
    """A negation on the verb, or on the verb an ``xcomp`` completes ("I don't want to
    move")."""
    heads = (v, v.head) if v.dep_ == "xcomp" else (v,)
    for c in (c for t in heads for c in t.children):
        if c.dep_ == "neg" or (c.dep_ == "advmod" and any(g.dep_ == "neg" for g in c.children)):
            return True  # "not", "never"; "no longer" (the "no" hangs on "longer")
    return False


def _tense(v: Token) -> str:
    aux = [c for c in v.children if c.dep_ in ("aux", "auxpass")]
    if any(fold(a.text) in _FUTURE for a in aux):
        return "future"
    if v.dep_ == "xcomp":
        head = v.head
        if head.lemma_ == "go" and head.tag_ == "VBG":
            return "future"  # "I'm going to move"
        if head.lemma_ == "use" and head.tag_ == "VBD":
            return "past"  # "I used to play the cello"
        return _tense(head)
    if any(a.lemma_ == "have" and a.dep_ == "aux" for a in aux) and v.tag_ in ("VBN", "VBG"):
        return "past" if any(a.tag_ == "VBD" for a in aux) else "perfect"
    if v.tag_ == "VBD" or any(a.tag_ == "VBD" for a in aux):
        return "past"
    return "present"


class _Resolver:
    """Phrases as written, with "I" and "you" standing for the people they name."""

    def __init__(self, speaker: str | None, addressee: str | None) -> None:
        self.speaker = speaker
        self.addressee = addressee

    def person(self, word: str) -> str | None:
        low = fold(word)
        if low in FIRST_PERSON:
            return self.speaker
        if low in SECOND_PERSON:
            return self.addressee
        return None

    def phrase(self, t: Token) -> tuple[str, tuple[int, int], str, str]:
        """(text, span, head, owner) of the phrase ``t`` heads: its compounds, modifiers,
        numbers and possessor as written, the whole entity when it is part of a name
        ("Bank of America"); determiners and a trailing possessive off."""
        span = (t.idx, t.idx + len(t.text))
        if t.pos_ == "PRON":
            name = self.person(t.text) or (self.speaker if _guess_who(t) else None)
            return (name or t.text, span, fold(name or t.text), "")
        keep = {t.i: t}
        stack = [c for c in t.children if c.i < t.i and c.dep_ in _PHRASE_DEPS]
        while stack:
            c = stack.pop()
            keep[c.i] = c
            stack += [g for g in c.children if g.dep_ in (*_PHRASE_DEPS, "case")]
        for c in t.children:
            if c.i > t.i and c.dep_ in ("flat", "compound"):
                keep[c.i] = c
        if t.ent_type_ in NAME_LABELS:
            ent = next(e for e in t.doc.ents if e.start <= t.i < e.end)
            keep.update({k.i: k for k in ent if k.pos_ != "DET"})
        toks = [keep[i] for i in sorted(keep)]
        while len(toks) > 1 and toks[-1].dep_ == "case":
            toks.pop()  # "St Mary's": the possessive after the name
        owner = ""
        words: list[str] = []
        for k in toks:
            name = self.person(k.text) if k.dep_ == "poss" and k.pos_ == "PRON" else None
            if name:
                owner = name
            words.append(f"{name}'s" if name else k.text)
        if not owner:
            owner = " ".join(k.text for k in toks if k.dep_ == "poss" and k.pos_ == "PROPN")
        head = fold(t.text) if t.pos_ == "PROPN" else fold(t.lemma_)
        span = (toks[0].idx, toks[-1].idx + len(toks[-1].text))
        return _join(toks, words), span, head, owner


def _guess_who(t: Token) -> bool:
    """ "Guess who's a project architect now": the speaker, who tells it as a riddle (the
    subject of a clause under an imperative "guess" without a subject of its own)."""
    if fold(t.text) != "who" or t.dep_ not in _SUBJECT or t.head.dep_ != "ccomp":
        return False
    guess = t.head.head
    return fold(guess.lemma_) == "guess" and not any(c.dep_ in _SUBJECT for c in guess.children)


def _join(keep: list[Token], words: list[str]) -> str:
    """Words of a phrase, spaced as written (no space before a possessive "'s" or
    inside a hyphenated name)."""
    out = ""
    for n, (k, w) in enumerate(zip(keep, words, strict=True)):
        if n and (keep[n - 1].whitespace_ or keep[n - 1].i + 1 != k.i):
            out += " "
        out += w
    return out.strip()
