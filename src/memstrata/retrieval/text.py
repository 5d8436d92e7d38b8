"""Words for BM25 and for matching names, independent of any store dialect."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from memstrata.nlp.script import sentences as sentences  # one splitter for every reader
from memstrata.nlp.script import terms

WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)

# Function words and question scaffolding: they match everything and rank nothing.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do
    does doesn't doing don't down during each few for from further had hadn't has hasn't
    have haven't having he he'd he'll he's her here here's hers herself him himself his how
    how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
    mustn't my myself no nor not of off on once only or other ought our ours ourselves out
    over own same shan't she she'd she'll she's should shouldn't so some such than that
    that's the their theirs them themselves then there there's these they they'd they'll
    they're they've this those through to too under until up very was wasn't we we'd we'll
    we're we've were weren't what what's when when's where where's which while who who's
    whom why why's with won't would wouldn't you you'd you'll you're you've your yours
    yourself yourselves also just will would like likely kind kinds sort thing things much
    many yet ever something anything does did do
    """.split()
)

#: Words about the conversation itself or the form of the answer ("across our
#: conversations", "what did I mention", "give me a summary"): a question's own
#: scaffolding, rare in the turns, where they would match only talk about talking.
META_WORDS = frozenset(
    """
    conversation conversations chat chats chatted session sessions discussion discussions
    discuss discussed discussing message messages mention mentions mentioned mentioning
    brought bring bringing talk talked talking told tell summary summarize summarise
    summarized summarised comprehensive throughout across items requests questions asked
    """.split()
)


def words(text: str) -> list[str]:
    """Lower-cased word tokens, apostrophes kept inside words; any script
    (:func:`memstrata.nlp.script.terms`: diacritics whole, Chinese and Japanese as
    character bigrams)."""
    return terms(text)


def plain(word: str) -> str:
    """A lower-cased word without its possessive 's."""
    return word[:-2] if word.endswith("'s") else word


def _is_content(word: str) -> bool:
    return word not in STOPWORDS and (len(word) >= 2 or word.isdigit())


def content_words(text: str) -> list[str]:
    """Non-stopword words in order, repeats kept; possessive 's dropped."""
    return [w for w in map(plain, words(text)) if _is_content(w)]


def word_key(word: str) -> int:
    """A content word as a 32-bit number (unsigned): what cached replies and vectors are
    filed under, so a delete finds what was made from its words (docs/engine.md,
    "Deleted means gone"). A collision only finds more."""
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=4).digest(), "big")


def word_keys(texts: Iterable[str]) -> set[int]:
    """:func:`word_key` of every content word of ``texts``."""
    return {word_key(w) for text in texts for w in content_words(text)}


def at_most_content_words(text: str, n: int) -> bool:
    """Whether ``text`` holds at most ``n`` content words (``len(content_words(text)) <=
    n``), read only as far as the (n+1)th: a search asks it of every candidate, and
    most candidates are long."""
    if not text.isascii():
        return len(content_words(text)) <= n
    count = 0
    for m in WORD.finditer(text.lower()):
        if _is_content(plain(m.group().replace("’", "'"))):
            count += 1
            if count > n:
                return False
    return True


def content_terms(text: str) -> list[str]:
    """Distinct non-stopword terms in order of first appearance; possessive 's dropped."""
    return list(dict.fromkeys(content_words(text)))


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    """NLTK's Porter stemmer, imported on first use: importing nltk takes a tenth of a
    second that listing recipes or opening a store should not pay."""
    from nltk.stem import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=65536)
def stem(term: str) -> str:
    """A term's Porter stem: "camped", "camping" and "camps" are one term."""
    return str(_stemmer().stem(term))


def stems(text: str) -> list[str]:
    """The text's distinct content terms, stemmed, in order of first appearance."""
    return list(dict.fromkeys(stem(t) for t in content_terms(text)))


def overlap(terms: list[str], text: str, idf: Callable[[str], float]) -> float:
    """Share of the query's stemmed content terms the text holds, each term weighted by its
    IDF (a rare word shared with the query says more than a common one). Terms are compared
    by stem (:func:`stem`), so "camped" meets "camping"."""
    total = sum(idf(t) for t in terms)
    if not total:
        return 0.0
    have = set(stems(text))
    return sum(idf(t) for t in terms if t in have) / total
