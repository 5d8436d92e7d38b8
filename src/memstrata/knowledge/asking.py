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

from typing import Literal

from memstrata.nlp import parse

Asked = Literal["now", "past", "first", "change"]

#: lemmas that put a question in the present
NOW = frozenset({"now", "currently", "current", "nowadays", "presently", "still", "anymore"})
#: lemmas (and "used to") that put it before a change
PAST = frozenset({"before", "previous", "previously", "formerly", "former", "earlier"})
#: lemmas that ask for the earliest value
FIRST = frozenset({"first", "originally", "original"})
#: two-word phrases of the present
NOW_PHRASES = (("these", "day"), ("at", "moment"), ("right", "now"))


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
