"""Provenance: a verbatim ``src`` quote located as a character span of the source.

Three tries, each within a region of the text (the chunk the quote was taken from):

1. **exact**: the quote (stripped) as a substring;
2. **normalised**: both sides with whitespace runs collapsed, typographic quotes and
   dashes folded to ASCII and case folded; the match is mapped back to original offsets;
3. **fuzzy**: the best partial alignment (``rapidfuzz``) of the normalised quote in the
   normalised region, kept only at ``min_score`` or more and when the aligned text is
   of similar length; quotes longer than ``max_fuzzy_chars`` are not tried (bounded cost).

A quote none of them finds is *unlocated*: the caller counts it and attaches no span,
rather than a wrong one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rapidfuzz import fuzz

Method = Literal["exact", "normalised", "fuzzy"]

_FOLD = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u2032": "'",
        "\u2033": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u00a0": " ",
        "`": "'",
    }
)


@dataclass(frozen=True)
class Located:
    start: int
    end: int
    method: Method
    score: float = 100.0


def normalise(text: str) -> tuple[str, list[int]]:
    """The normalised text and, for each of its characters, the offset it came from."""
    out: list[str] = []
    where: list[int] = []
    space = False
    for i, ch in enumerate(text.translate(_FOLD)):
        if ch.isspace():
            if out and not space:
                out.append(" ")
                where.append(i)
            space = True
            continue
        space = False
        for c in ch.casefold():
            out.append(c)
            where.append(i)
    if out and out[-1] == " ":
        out.pop()
        where.pop()
    return "".join(out), where


def locate(
    quote: str,
    text: str,
    start: int = 0,
    end: int | None = None,
    *,
    min_score: float = 85.0,
    max_fuzzy_chars: int = 400,
) -> Located | None:
    """The span of ``quote`` in ``text[start:end]`` (offsets into ``text``), or None."""
    end = len(text) if end is None else end
    q = quote.strip()
    if not q:
        return None
    at = text.find(q, start, end)
    if at >= 0:
        return Located(at, at + len(q), "exact")
    region = text[start:end]
    nregion, where = normalise(region)
    nquote, _ = normalise(q)
    if not nquote or not nregion:
        return None
    at = nregion.find(nquote)
    if at >= 0:
        return Located(start + where[at], start + where[at + len(nquote) - 1] + 1, "normalised")
    if len(nquote) > max_fuzzy_chars or len(nquote) < 8:
        return None
    found = fuzz.partial_ratio_alignment(nquote, nregion, score_cutoff=min_score)
    if found is None or found.dest_end <= found.dest_start:
        return None
    length = found.dest_end - found.dest_start
    if not 0.7 * len(nquote) <= length <= 1.3 * len(nquote):
        return None
    s, e = where[found.dest_start], where[found.dest_end - 1] + 1
    return Located(start + s, start + e, "fuzzy", round(found.score, 1))


def window(text: str, start: int, end: int, size: int = 1000) -> tuple[int, int]:
    """About ``size`` characters of ``text`` centred on ``[start, end)``, widened to the
    nearest line breaks within 200 characters so a window holds whole lines."""
    centre = (start + end) // 2
    lo = max(0, min(start, centre - size // 2))
    hi = min(len(text), max(end, lo + size))
    lo = max(0, min(lo, hi - size))
    nl = text.rfind("\n", max(0, lo - 200), lo + 1)
    if nl >= 0:
        lo = nl + 1 if nl < start else lo
    nl = text.find("\n", hi - 1, min(len(text), hi + 200))
    if nl >= 0:
        hi = nl
    return lo, max(hi, lo)
