"""Token-bounded, sentence-aware chunking of one text into character spans.

Any design that stores pieces of a long episode (a MemTree leaf, a passage of a
document) cuts it here, so the pieces of one text are the same whoever asks. Sentences
(:func:`memstrata.retrieval.text.sentences`) are packed greedily into chunks of at most
``max_tokens`` word pieces (:func:`memstrata.retrieval.context.count_tokens`); a sentence
longer than the bound on its own is cut between words. The spans index the original
text, so they serve directly as provenance (:class:`memstrata.models.Span`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memstrata.retrieval.text import sentences

_WORD = re.compile(r"\S+")

Counter = Callable[[str], int]


def _count(text: str) -> int:
    from memstrata.retrieval.context import count_tokens

    return count_tokens(text)


def chunk_spans(
    text: str, max_tokens: int = 512, count: Counter | None = None
) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of ``text``'s chunks, in order.

    A text within the bound is one span over the whole text (``(0, len(text))``), so a
    short episode keeps an exact provenance span. Otherwise each span runs from the start
    of its first sentence to the end of its last; whitespace between chunks belongs to no
    span. An empty or blank text has no chunks.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    if not text.strip():
        return []
    count = count or _count
    if count(text) <= max_tokens:
        return [(0, len(text))]
    pieces: list[tuple[int, int, int]] = []  # (start, end, tokens) of sentences or word runs
    for start, end in sentences(text) or [(0, len(text))]:
        n = count(text[start:end])
        if n <= max_tokens:
            pieces.append((start, end, n))
        else:
            pieces.extend(_split_words(text, start, end, max_tokens, count))
    out: list[tuple[int, int]] = []
    cur_start, cur_end, cur_n = -1, -1, 0
    for start, end, n in pieces:
        if cur_start >= 0 and cur_n + n <= max_tokens:
            cur_end, cur_n = end, cur_n + n
            continue
        if cur_start >= 0:
            out.append((cur_start, cur_end))
        cur_start, cur_end, cur_n = start, end, n
    if cur_start >= 0:
        out.append((cur_start, cur_end))
    return out


def _split_words(
    text: str, start: int, end: int, max_tokens: int, count: Counter
) -> list[tuple[int, int, int]]:
    """A sentence over the bound, cut into runs of whole words within it (a single word
    longer than the bound becomes a run of its own)."""
    runs: list[tuple[int, int, int]] = []
    run_start, run_end, run_n = -1, -1, 0
    for m in _WORD.finditer(text, start, end):
        n = count(m.group())
        if run_start >= 0 and run_n + n <= max_tokens:
            run_end, run_n = m.end(), run_n + n
            continue
        if run_start >= 0:
            runs.append((run_start, run_end, run_n))
        run_start, run_end, run_n = m.start(), m.end(), n
    if run_start >= 0:
        runs.append((run_start, run_end, run_n))
    return runs


def chunks(text: str, max_tokens: int = 512, count: Counter | None = None) -> list[str]:
    """The chunk texts of :func:`chunk_spans`."""
    return [text[s:e] for s, e in chunk_spans(text, max_tokens, count)]
