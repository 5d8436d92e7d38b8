"""Likes and dislikes, without a model: what a question asks and what a turn states.

A question about preferences ("What is her favourite dance?", "What does he dislike?")
is answered by a turn that states one ("I love salsa", "I can't stand crowds"), and the
words of the two rarely match: "favourite" is not in "I love salsa". :func:`asks` reads
which polarity a question asks about (a negated like, "doesn't enjoy", asks about a
dislike); :func:`states` reads which polarities a turn states. The patterns are English
function words and preference verbs, nothing a data set taught.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

Polarity = Literal["like", "dislike"]

_NEG = r"(?:don't|doesn't|didn't|do not|does not|did not|never|not|no longer|wouldn't|won't)"
_LIKE_VERB = r"(?:like|likes|love|loves|enjoy|enjoys|adore|adores|prefer|prefers|fancy|fancies)"
_DISLIKE_VERB = (
    r"(?:hate|hates|hated|dislike|dislikes|disliked|detest|detests|loathe|loathes|"
    r"can't stand|cannot stand|can't bear|couldn't stand)"
)
_ASK_DISLIKE = re.compile(
    rf"\b(?:{_DISLIKE_VERB}|{_NEG}\s+(?:(?:i|we|he|she|they|you)\s+)?(?:really\s+)?{_LIKE_VERB}|"
    r"avoid|avoids|not a fan|"
    r"least favou?rite|pet peeve)\b",
    re.I,
)
_ASK_LIKE = re.compile(rf"\b(?:{_LIKE_VERB}|favou?rite|fan of|passionate about)\b", re.I)
#: "like" that compares, not prefers: "look like", "feel like", "would like", "like a"
_NOT_PREFERENCE = re.compile(
    r"\b(?:looks?|looked|feels?|felt|sounds?|sounded|seems?|seemed|i'd|you'd|we'd)\s+like\b"
    r"|\bwould\s+(?:(?:i|you|he|she|they|we)\s+)?like\b"
    r"|\blike\s+(?:a|an|the|this|that|what|how)\b",
    re.I,
)
_SUBJECT = r"(?:i|we|he|she|they|i've|we've|i'd|we'd|i'm|really|also|just|absolutely|totally)"
_STATE_LIKE = re.compile(
    rf"\b(?:{_SUBJECT}\s+(?:really\s+|also\s+|just\s+|absolutely\s+|totally\s+)?"
    rf"(?:love|loved|like|liked|enjoy|enjoyed|adore|adored|prefer|preferred)|my favou?rite|"
    r"(?:big|huge|great) fan of|passionate about|obsessed with|can't get enough of|"
    r"i'm (?:really |so )?into)\b",
    re.I,
)
_STATE_DISLIKE = re.compile(
    rf"\b(?:{_DISLIKE_VERB}|{_NEG}\s+(?:really\s+|much\s+)?(?:like|love|enjoy)|"
    r"not (?:a|much of a|the biggest) fan|not (?:really )?into|least favou?rite|pet peeve|"
    r"drives me (?:crazy|nuts)|can't deal with)\b",
    re.I,
)


def _said(pattern: re.Pattern[str], text: str) -> bool:
    """A match in running text: a capitalised word inside a sentence is a name or a
    title ("In Love and War"), not a verb."""
    return any(
        not (
            m.group(0)[0].isupper()
            and m.start() > 0
            and text[: m.start()].rstrip()[-1:] not in ".!?"
        )
        for m in pattern.finditer(text)
    )


def asks(question: str) -> Polarity | None:
    """The polarity a question asks about; None when it asks about no preference."""
    if _said(_ASK_DISLIKE, question):
        return "dislike"
    if _said(_ASK_LIKE, _NOT_PREFERENCE.sub(" ", question)):
        return "like"
    return None


@lru_cache(maxsize=8192)
def states(text: str) -> frozenset[Polarity]:
    """The polarities a turn states ("I love ...", "I can't stand ..."); cached, as
    searches meet the same turns."""
    out: set[Polarity] = set()
    dislike = _STATE_DISLIKE.search(text)
    if dislike:
        out.add("dislike")
    # a negated like ("I don't like") is a dislike, not also a like
    rest = _STATE_DISLIKE.sub(" ", text) if dislike else text
    if _STATE_LIKE.search(rest):
        out.add("like")
    return frozenset(out)
