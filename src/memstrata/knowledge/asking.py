"""What a question asks of time, read off its parse.

* ``now``: the current value ("Where does Jonas live?", "... these days", "currently",
  "now", "still"): a present-tense question, or one with a word of the present;
* ``past``: an earlier value ("before", "used to", "previous", "formerly");
* ``first``: the earliest value ("first", "originally");
* ``change``: when or how often a value changed ("When did she move to Zürich?", "How
  many times did ... change?");
* None: anything else (a past-tense question about an event, a perfect "Where has she
  camped?", which gathers rather than picks).

The words of time are a closed class of English adverbs and adjectives, read as lemmas;
the tense comes from the parse's verb tags.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from memstrata.nlp import fold, name_key, names, parse

Asked = Literal["now", "past", "first", "change"]

#: lemmas that put a question in the present
NOW = frozenset({"now", "currently", "current", "nowadays", "presently", "still", "anymore"})
#: lemmas (and "used to") that put it before a change
PAST = frozenset({"before", "previous", "previously", "formerly", "former", "earlier"})
#: lemmas that ask for the earliest value
FIRST = frozenset({"first", "originally", "original"})
#: two-word phrases of the present
NOW_PHRASES = (("these", "day"), ("at", "moment"), ("right", "now"))
#: every lemma of the closed class: what a question says of time, not of its content
TIME = NOW | PAST | FIRST | {"day", "moment", "used", "use"}
#: adjectives that date a thing rather than say what it is ("his new job" is his job)
_DATING = frozenset({"new", "old", "latest", "recent", "last", "late"})
#: the parts of speech that carry a question's content
_CONTENT = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "NUM"})


def asked(question: str) -> Asked | None:
    """What ``question`` asks of time (see the module)."""
    (doc,) = parse([question])
    lemmas = [t.lemma_.casefold() for t in doc]
    words = [t.text.casefold() for t in doc]
    tags = {t.tag_ for t in doc}
    opening = lemmas[0] if lemmas else ""
    if opening == "when" and "VBD" in tags:
        return "change"
    if opening == "how" and "time" in lemmas and ("change" in lemmas or "switch" in lemmas):
        return "change"
    if any(a in ("used", "use") and b == "to" for a, b in zip(words, words[1:], strict=False)):
        return "past"
    if FIRST & set(lemmas):
        return "first"
    if PAST & set(lemmas):
        return "past"
    pairs = set(zip(lemmas, lemmas[1:], strict=False))
    if NOW & set(lemmas) or any(p in pairs for p in NOW_PHRASES):
        return "now"
    if "VBD" in tags or "VBN" in tags:
        return None  # about an event, or a perfect that gathers values
    if tags & {"VBZ", "VBP"}:
        return "now"
    return None


def present_words(words: list[str]) -> set[str]:
    """Of a question's folded words, in order, those that only say it asks about the
    present ("now", "currently", "still", "these days"), read without a parse: a search
    that matches them finds turns that also say "now", not turns about the question."""
    out = {w for w in words if w in NOW}
    for a, b in zip(words, words[1:], strict=False):
        if (a, b.removesuffix("s")) in NOW_PHRASES:
            out |= {a, b}
    return out


def time_words(question: str) -> set[str]:
    """The words of ``question`` (folded, as written) that say what it asks of time
    ("now", "these days", "used to", "before"), and not what it is about: a turn is no
    answer because it also says "now"."""
    (doc,) = parse([question])
    toks = list(doc)
    out: set[str] = set()
    for i, t in enumerate(toks):
        lemma = t.lemma_.casefold()
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        pair = (lemma, nxt.lemma_.casefold()) if nxt is not None else None
        if lemma in NOW | PAST | FIRST and t.pos_ in ("ADV", "ADJ"):
            out.add(fold(t.text))
        elif pair in NOW_PHRASES or (pair == ("use", "to")):
            out |= {fold(t.text), fold(nxt.text)} if nxt is not None else set()
    return out


@dataclass(frozen=True)
class Focus:
    """Whom a question asks about (name keys) and the lemmas of what it asks of them."""

    subjects: frozenset[str]
    words: frozenset[str]
    #: every word of the question, folded (its prepositions too: "live in")
    said: frozenset[str] = frozenset()


def focus(question: str, people: tuple[str, ...] | list[str] = ()) -> Focus:
    """The question's subjects (names, and ``people`` it names: "the user") and its
    content lemmas, its subjects and words of time left out: "Where does Zoë work now?"
    asks Zoë about ``work``."""
    (doc,) = parse([question])
    keys = {name_key(p): p for p in people}
    subjects = {name_key(n.text) for n in names(question, known=people)}
    subjects |= {k for k in keys if k and k in {fold(t.text) for t in doc}}
    timely = time_words(question)
    words = {
        t.lemma_.casefold()
        for t in doc
        if t.pos_ in _CONTENT
        and not t.is_stop
        and fold(t.text) not in timely
        and name_key(t.text) not in subjects
    }
    said = frozenset(fold(t.text) for t in doc)
    return Focus(frozenset(s for s in subjects if s), frozenset(words - TIME - _DATING), said)


#: what "how" asks of an amount ("how much", "how long", ...)
_HOW = frozenset("much many long far old often big fast heavy tall high".split())


def asks_amount(question: str) -> bool:
    """Whether ``question`` asks for an amount or an attribute's value: "How much ...",
    "How long ...", or "What is X's ...?" (a copula: the answer is what the thing is, "95
    kg"), not "What car does she drive?" (a thing) nor "What did she do?" (an event)."""
    (doc,) = parse([question])
    toks = [t for t in doc if not t.is_punct]
    if len(toks) < 2:
        return False
    first, second = fold(toks[0].text), toks[1]
    if first == "how":
        return fold(second.lemma_) in _HOW
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    return first == "what" and root is not None and root.lemma_ == "be"


#: letters a word needs to match another it begins, or that begins it
STEM = 4


def says(words: Iterable[str], asked: Iterable[str]) -> bool:
    """Whether ``words`` (folded words or lemmas) say one of the question's ``asked``:
    the same word, or a word of :data:`STEM` letters or more beginning the other ("month"
    and "monthly"; the small model's lemma of "deadlifted" is "deadlifte")."""
    mine, theirs = set(words), set(asked)
    if mine & theirs:
        return True
    long = [w for w in theirs if len(w) >= STEM]
    return any(u.startswith(w) or w.startswith(u) for u in mine if len(u) >= STEM for w in long)


def timeless(question: str) -> str:
    """``question`` without its words of time (:func:`time_words`)."""
    timely = time_words(question)
    kept = [w for w in question.split() if fold(w.strip("?!.,;:")) not in timely]
    return " ".join(kept) if kept else question
