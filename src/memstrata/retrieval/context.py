"""Fitting hits to a token budget and rendering them as the context an answer model reads."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from tokenizers import Tokenizer

from memstrata.models import Hit


@lru_cache(maxsize=1)
def _tokenizer() -> Tokenizer:
    from memstrata.embed.minilm import load_tokenizer

    return load_tokenizer(max_tokens=1_000_000)


def count_tokens(text: str) -> int:
    """Word pieces of the MiniLM tokenizer (ships in the package, works offline).

    It is not the answer model's tokenizer; for English it runs within about 10% of
    common BPE tokenizers, which is what a budget needs.
    """
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def render_hit(hit: Hit) -> str:
    sources = ", ".join(hit.sources)
    return f"- ({hit.kind} {sources}) {hit.text}"


def fit_to_budget(hits: list[Hit], max_tokens: int | None) -> tuple[list[Hit], str, int]:
    """Keep hits in order while the rendered context stays within ``max_tokens``."""
    kept: list[Hit] = []
    lines: list[str] = []
    used = 0
    rendered = [render_hit(h) for h in hits]
    cap = _char_cap(max_tokens)
    costs = (
        [
            len(e.ids) + 1
            for e in _tokenizer().encode_batch(
                [line[:cap] for line in rendered], add_special_tokens=False
            )
        ]
        if rendered
        else []
    )
    for hit, line, cost in zip(hits, rendered, costs, strict=True):
        if max_tokens is not None and used + cost > max_tokens:
            if not kept:  # one hit always fits, cut to the budget, so a context is never empty
                line = truncate_tokens(line, max_tokens)
                kept.append(hit)
                lines.append(line)
                used = count_tokens(line)
            break
        kept.append(hit)
        lines.append(line)
        used += cost
    return kept, "\n".join(lines), used


def truncate_tokens(text: str, max_tokens: int) -> str:
    """Cut ``text`` so that it plus the ellipsis stays within ``max_tokens``."""
    enc = _tokenizer().encode(text[: _char_cap(max_tokens)], add_special_tokens=False)
    if len(enc.ids) <= max_tokens:
        return text
    if max_tokens <= 1:
        return "…"
    end = enc.offsets[max_tokens - 2][1]
    return text[:end] + "…"


def shorten_longest(texts: Sequence[str], room: int) -> list[str]:
    """``texts`` whole while their tokens total at most ``room``; else the longest are cut
    to one common length, the largest that fits (each cut one ending in an ellipsis), and
    the shorter stay whole: a prompt listing them loses the least of what it shows. Below
    one token each nothing is left to cut, so a room that small is exceeded."""
    sizes = [len(e.ids) for e in _tokenizer().encode_batch(list(texts), add_special_tokens=False)]
    if not sizes or sum(sizes) <= room:
        return list(texts)
    lo, hi = 1, max(sizes)  # the largest cap whose capped sizes fit, at least 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if sum(min(s, mid) for s in sizes) <= room else (lo, mid - 1)
    return [t if s <= lo else truncate_tokens(t, lo) for t, s in zip(texts, sizes, strict=True)]


def _char_cap(max_tokens: int | None) -> int | None:
    """No word piece is longer than 100 characters (longer words become one [UNK]), so
    counting further than this cannot change whether a text fits the budget."""
    return None if max_tokens is None else 100 * (max_tokens + 1)
