"""Turns of a transcript read as one plain document.

A chat exported as text marks each turn with a speaker line (``Ana: ...``, often after a
time, ``[2023-07-15 13:51] Ana: ...``); the turn runs until the next speaker line and
may hold lines of its own (lists, code, paragraphs). :func:`turns` finds those
boundaries from the text alone: a label counts as a speaker when it starts lines again
at least twice and as often as a fifth of the busiest label's lines or more (so
"Note:" inside one long answer is not a speaker), and reads like a name (letters,
spaces, dots, hyphens and apostrophes, at most four words: "Step 1:" is not one). A
text with fewer than three speaker lines is not a transcript: its turns are None.

With turns, a document can be searched the way the engine searches a conversation (by
turn, speaker and time); :mod:`memstrata.reading` stores them as episodes of
:func:`turns_namespace` for readers to search.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

#: a line that starts a turn: an optional bracketed time, a label, a colon and a space
_HEAD = re.compile(
    r"^(?:\[(?P<when>[^\]\n]{1,40})\][ \t]*)?(?P<label>[^\W\d_](?:[^\W\d_]|[ .'’-]){0,38}?):[ \t]",
    re.M,
)
#: the least number of speaker lines that makes a transcript, and of one speaker's
MIN_TURNS = 3
MIN_SPEAKER_TURNS = 2
#: a speaker's lines against the busiest speaker's: below this share, a label is text
MIN_SHARE = 0.2
MAX_LABEL_WORDS = 4


@dataclass(frozen=True)
class Turn:
    """One turn: ``start``-``end`` is the whole turn in the document (its speaker line
    included), ``body`` where its text begins (after the label)."""

    start: int
    end: int
    body: int
    speaker: str | None
    at: datetime | None


def turns(text: str) -> list[Turn] | None:
    """The turns of ``text`` in order, or None when it reads as no transcript. Text
    before the first speaker line is a turn without a speaker; a turn without its own
    time has the time of the turn before it (a header's time holds until the next)."""
    heads = [m for m in _HEAD.finditer(text) if len(m["label"].split()) <= MAX_LABEL_WORDS]
    counts = Counter(m["label"].strip().casefold() for m in heads)
    if not counts:
        return None
    top = counts.most_common(1)[0][1]
    speakers = {
        label for label, n in counts.items() if n >= max(MIN_SPEAKER_TURNS, MIN_SHARE * top)
    }
    heads = [m for m in heads if m["label"].strip().casefold() in speakers]
    if len(heads) < MIN_TURNS:
        return None
    out: list[Turn] = []
    if text[: heads[0].start()].strip():
        out.append(Turn(0, _trim(text, 0, heads[0].start()), 0, None, None))
    at: datetime | None = None
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        at = _time(m["when"]) or at
        out.append(Turn(m.start(), _trim(text, m.start(), end), m.end(), m["label"].strip(), at))
    return out


def turns_namespace(namespace: str) -> str:
    """Where the turns of the document read in ``namespace`` are kept as episodes."""
    return f"{namespace}-turns"


def _trim(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _time(raw: str | None) -> datetime | None:
    if not raw:
        return None
    try:
        return datetime.fromisoformat(raw.strip())
    except ValueError:
        return None
