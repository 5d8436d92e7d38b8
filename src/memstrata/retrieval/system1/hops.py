"""Multi-hop questions: the second step of a two-step question, and the other names of a
question about several things, read from the best candidate's text (System-1's
``link_boost`` and ``cover_boost``, applied by the stage :func:`second_step`).

A bridge ("the film shot in Leland in 1986" -> *Maximum Overdrive* -> its director) is
named in the first step's evidence and not in the question; a question about two things
("Mark King or Nick Hexum") finds one of them first. Both are told by words written as
names; how strongly another candidate is about such a word is BM25's weight of it there.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from functools import lru_cache

from memstrata.retrieval.system1.candidates import Candidates
from memstrata.retrieval.text import WORD, content_terms, content_words, plain, sentences, words


def link_words(anchor: str, asked: set[str]) -> set[str]:
    """The words that may join ``anchor`` to the second step of a two-step question.

    The bridge of such a question is named in its first step's evidence and not in the
    question ("the film shot in Leland in 1986" finds a passage naming *Maximum
    Overdrive*, and that film's own passage says who directed it): words of ``anchor``
    written as names (capitalised inside a sentence, or holding a digit) that are not in
    ``asked`` (the question's words, the speakers' names)."""
    return (set(_word_counts(anchor)) & _name_words(anchor)) - asked


def cover_words(question: str, anchor: str, speakers: set[str]) -> set[str]:
    """The names ``question`` asks about that ``anchor`` does not hold, when it holds
    some of them.

    A question about two things ("Which singer is American, Mark King or Nick Hexum?")
    finds one first; the evidence for the other is what the best candidate leaves
    uncovered. A question none of whose names the anchor holds gives nothing: then the
    names are not what found the anchor (a nickname, a name only said in greetings), and
    raising the texts that hold them would follow the wrong thread. Speakers' names are
    left to the speaker match."""
    names = (set(content_words(question)) & _name_words(question)) - speakers
    uncovered = names - set(_word_counts(anchor))
    return set() if uncovered == names else uncovered


def word_strengths(
    found: set[str],
    others: list[str],
    doc_freqs: Callable[[list[str]], tuple[int, dict[str, int]]],
) -> list[float]:
    """How strongly each of ``others`` is about one of the words ``found``, in [0, 1).

    A word's weight in a text is BM25's: idf over the namespace (``doc_freqs`` gives the
    episode count and the words' counts), over log of the episode count, times the
    saturated, length-normalised frequency of the word in that text, so a long text
    that names everything once is not about each of those names. A text's strength is
    that of its strongest word."""
    counts = [_word_counts(text) for text in others]
    shared = [found & c.keys() for c in counts]
    present = sorted(set().union(*shared))
    if not present:
        return [0.0] * len(others)
    docs, freqs = doc_freqs(present)
    if docs < 2:
        return [0.0] * len(others)
    lengths = [c.total() for c in counts]
    mean_len = max(1.0, sum(lengths) / len(lengths))
    out = []
    for c, words_, length in zip(counts, shared, lengths, strict=True):
        norm = _K1 * (1 - _B + _B * length / mean_len)
        out.append(
            max(
                (
                    math.log(docs / freqs[w]) / math.log(docs) * c[w] / (c[w] + norm)
                    for w in words_
                    if freqs.get(w)
                ),
                default=0.0,
            )
        )
    return out


# BM25's constants (as in the stores' indexes)
_K1, _B = 1.2, 0.75


@lru_cache(maxsize=8192)
def _word_counts(text: str) -> Counter[str]:
    """How often each content word occurs in a text."""
    return Counter(content_words(text))


@lru_cache(maxsize=8192)
def _name_words(text: str) -> frozenset[str]:
    """Words written as names: capitalised but not first in their sentence ("Leland",
    "Overdrive"), or holding a digit ("1986")."""
    out: set[str] = set()
    for start, end in sentences(text):
        for i, match in enumerate(WORD.finditer(text, start, end)):
            word = match.group()
            if (i and word[0].isupper()) or any(c.isdigit() for c in word):
                out.add(plain(word.lower().replace("’", "'")))
    return frozenset(out)


def second_step(c: Candidates) -> None:
    """Raise the candidates about the second step of the question: a name the best
    candidate mentions and the question does not (``link_boost``), or a name the
    question asks about and the best candidate does not hold (``cover_boost``). Each
    gains its factor x the best score x its strength (:func:`word_strengths`); the
    best candidate gains the largest raise, so it stays first."""
    p, final = c.params, c.final
    if not (p.link_boost or p.cover_boost):
        return
    pool = c.best(p.link_pool)
    unread = [key for key in pool if key not in c.texts]
    if unread:
        c.texts = {**c.texts, **c.store.episode_texts(unread)}
    keys = [key for key in pool if key in c.texts]
    if len(keys) < 2 or keys[0] != pool[0]:
        return
    anchor, others = c.texts[keys[0]].text, [c.texts[key].text for key in keys[1:]]
    speakers = {w for speaker in c.plan.known_speakers for w in words(speaker)}
    speakers.update(c.plan.alias_words)
    question = c.plan.text
    top = final[pool[0]]
    gains = [0.0] * len(others)
    parts: dict[str, list[float]] = {}
    for rule, boost, found in (
        (
            "link_boost",
            p.link_boost,
            lambda: link_words(anchor, set(content_terms(question)) | speakers),
        ),
        ("cover_boost", p.cover_boost, lambda: cover_words(question, anchor, speakers)),
    ):
        if boost:
            strengths = word_strengths(
                found(), others, lambda ws: c.store.doc_freqs(c.namespace, ws)
            )
            parts[rule] = [boost * top * s for s in strengths]
            gains = [g + x for g, x in zip(gains, parts[rule], strict=True)]
    for key, gain in zip(keys[1:], gains, strict=True):
        final[key] += gain
    lead = max(gains, default=0.0)
    final[pool[0]] += lead
    for rule, part in parts.items():
        for key, x in zip(keys[1:], part, strict=True):
            c.ledger.gain(rule, key, x)
        if lead:  # the best's raise, shared as the best-raised candidate's was
            at = gains.index(lead)
            c.ledger.gain(rule, pool[0], lead * part[at] / gains[at])
