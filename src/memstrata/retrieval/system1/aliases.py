"""The other names of a conversation's two speakers, read from how they address each other.

People in a chat are often known by a name other than the label of their messages: a
log says ``Emi`` while the other person writes "Hey Kate!" and "Thank you Kate", and
questions about the chat then ask "When did Kate go skiing?". A name the question uses
that is no speaker's is looked up in the turns: said to someone ("Hi Kate", "thanks,
Kate!", "What about you Kate?"), it names the other of the two speakers; said of oneself
("I'm Kate"), it names the one who says it. The patterns are English greetings and
punctuation, nothing a data set taught.

With more than two speakers the person addressed is not known from the text alone, so
only two-person conversations learn other names.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

from memstrata.retrieval.text import STOPWORDS, WORD, plain, words

_GREETING = (
    r"hi|hey|heya|hiya|hello|dear|thanks|thank\s+you|bye|goodbye|good\s+morning|"
    r"good\s+night|goodnight|morning|congrats|congratulations|wow|aw+|sorry"
)

#: fewest times a name must be said to one speaker before it counts as theirs
MIN_VOTES = 2
#: share of a name's uses that must point at the same speaker
MIN_SHARE = 0.8
#: a speaker's own uses of the name (not introducing themselves), per use in address to
#: them, beyond which it is someone else's name
MAX_OWN_USE = 0.1


def unknown_names(question: str, known_speakers: Iterable[str]) -> list[str]:
    """The capitalised words of the question that are not part of a speaker's label and
    not function words: the names it may use for a speaker (lowercased)."""
    known = {w for speaker in known_speakers for w in words(speaker)}
    out: list[str] = []
    for match in WORD.finditer(question):
        token = match.group()
        word = plain(token.lower().replace("’", "'"))
        if not token[:1].isupper() or len(word) < 2 or not word.isalpha():
            continue
        if word in STOPWORDS or word in known or word in out:
            continue
        out.append(word)
    return out


@lru_cache(maxsize=1024)
def _patterns(name: str) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    n = re.escape(name)
    said_to = re.compile(
        rf"\b(?:{_GREETING})[,!]?\s+{n}\b(?!['’])"  # "Hey Kate", "Thank you Kate"
        rf"|(?P<before>[^\W\d_]+),\s*{n}\s*(?:[.!?]|$)"  # "so true, Kate!"
        rf"|(?:^|[.!?]\s+){n}\s*[,!](?!\w)"  # "Kate! You have to ..."
        rf"|\byou\s+{n}\s*[?!.,]",  # "What about you Kate?"
        re.I,
    )
    # said of oneself only with a capital: "I'm considering" names no one
    cap = re.escape(name[:1].upper() + name[1:])
    said_of_self = re.compile(rf"\b(?i:i'm|i’m|i\s+am|my\s+name\s+is|call\s+me)\s+{cap}\b(?!['’])")
    held = re.compile(rf"\b{n}\b", re.I)
    return said_to, said_of_self, held


def _times_said_to(pattern: re.Pattern[str], text: str) -> int:
    """Uses of the name in address; "Houston, Texas" (a capitalised word before the
    comma) is a place, not a person spoken to."""
    return sum(1 for m in pattern.finditer(text) if not (m["before"] or "a")[0].isupper())


@lru_cache(maxsize=8192)
def _uses(name: str, text: str) -> tuple[int, int] | None:
    """How many times a turn uses ``name`` in address and to introduce its speaker; None
    when it does not hold the name. Cached, as searches meet the same turns."""
    said_to, said_of_self, held = _patterns(name)
    if not held.search(text):
        return None
    return _times_said_to(said_to, text), len(said_of_self.findall(text))


def speaker_named(
    name: str, turns: Iterable[tuple[str | None, str]], speakers: list[str]
) -> str | None:
    """The speaker that ``name`` stands for in a two-person conversation, from its
    ``(speaker, text)`` turns (those that hold the name are enough); None when the turns
    do not say so clearly: fewer than :data:`MIN_VOTES` uses pointing at one speaker,
    less than :data:`MIN_SHARE` of them, or that speaker using the name in their own
    turns other than to introduce themselves (more than :data:`MAX_OWN_USE` times per
    use in address). That last rule tells a nickname from a third person whom the
    speaker writes letters to ("Hi Kelly," in an email drafted for the user, who also
    writes "I met Kelly at the book club")."""
    if len(speakers) != 2:
        return None
    votes: Counter[str] = Counter()
    own_use: Counter[str] = Counter()
    for speaker, text in turns:
        if speaker not in speakers or (uses := _uses(name, text)) is None:
            continue
        other = speakers[1] if speaker == speakers[0] else speakers[0]
        addressed, intros = uses
        votes[other] += addressed
        votes[speaker] += intros
        if not intros:
            own_use[speaker] += 1
    if not votes:
        return None
    (best, count), total = votes.most_common(1)[0], sum(votes.values())
    if count < MIN_VOTES or count < MIN_SHARE * total or own_use[best] > MAX_OWN_USE * count:
        return None
    return best
