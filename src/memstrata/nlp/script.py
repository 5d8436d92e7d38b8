"""Words and sentences in any script, without a model.

* **words** are runs of letters, combining marks and digits (``Zürich`` typed with a
  combining diaeresis is one word), joined by an inner apostrophe or hyphen (``Evan's``,
  ``Jean-Luc``, ``Saint-Étienne``). Scripts written without spaces are cut where the
  script changes: Japanese ``田中さんは東京に住んでいます`` gives ``田中 / さんは / 東京 /
  に / 住 / んでいます`` (kanji, hiragana and katakana runs; hiragana carries the
  grammar). A run of Han characters is not cut further (Chinese has no such cue):
  matching falls back to character bigrams (:func:`match_terms`).
* **sentences** end at ``. ! ?`` followed by a space or the end (``0.4`` and ``e.g.,``
  stay inside), at a line break, and at the ideographic ``。！？`` (no space follows
  them in Chinese or Japanese).
* **names compare** folded: NFC (one code point per accented letter), case-folded,
  possessive ``'s`` off (:func:`fold`).
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache, lru_cache
from typing import Any

# A sentence ends after a run of terminators (with any closing quotes or brackets) that
# whitespace or the end of the text follows, at a line break, or after ideographic
# terminators. Possessive runs, tried only where a run begins, keep the scan linear.
_SENTENCE_END = re.compile(r"(?<![.!?])[.!?]++['\"’”)\]]*+(?=\s|$)|\n|[。！？]++[」』）\"”]*+")
_CJK_RANGES = (
    (0x3040, 0x30FF),  # hiragana, katakana
    (0x31F0, 0x31FF),  # katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width katakana
    (0x20000, 0x3134F),  # CJK extensions B-G
)
#: Han suffixes of address after a Japanese name (様 sama, 氏 shi, 君 kun, 殿 dono, 先生
#: sensei): not part of the name; さん and ちゃん are hiragana and fall away with it
HONORIFICS = ("先生", "様", "氏", "君", "殿")


@cache
def _word() -> Any:
    """The word pattern, compiled on first use (the ``regex`` module knows Unicode
    scripts and marks; importing it costs a one-shot command 30 ms)."""
    import regex

    cjk = r"\p{Han}\p{Hiragana}\p{Katakana}"
    letter = rf"[[\p{{L}}\p{{M}}\p{{N}}]--[{cjk}_]]"
    return regex.compile(
        rf"[\p{{Han}}々〆〇]+|[\p{{Katakana}}ー]+|[\p{{Hiragana}}ー]+"
        rf"|{letter}+(?:['’\-‐]{letter}+)*",
        regex.V1,
    )


#: the words of ASCII text for matching: letters and digits, inner apostrophes kept
_ASCII_TERM = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


@cache
def _term() -> Any:
    """:func:`terms`' pattern for other text: like :func:`_word`, but a hyphen splits
    (``second-hand`` is two terms, as in ASCII text)."""
    import regex

    cjk = r"\p{Han}\p{Hiragana}\p{Katakana}"
    letter = rf"[[\p{{L}}\p{{M}}\p{{N}}]--[{cjk}_]]"
    return regex.compile(
        rf"[\p{{Han}}々〆〇]+|[\p{{Katakana}}ー]+|[\p{{Hiragana}}ー]+|{letter}+(?:'{letter}+)*",
        regex.V1,
    )


def terms(text: str) -> list[str]:
    """The words a text is matched on (BM25 overlap, content terms, cache keys), in
    order, repeats kept: lower case, apostrophes inside words kept (``evan's``; the
    caller drops a possessive). ASCII text takes the fast path; other text is first
    made NFC and case-folded, keeps its combining marks (``Zürich`` typed with a
    combining diaeresis is one word), and a Han or kana run gives its character bigrams
    (:func:`ngrams`: "我住在北京" holds ``北京``)."""
    if text.isascii():
        return _ASCII_TERM.findall(text.lower())
    folded = unicodedata.normalize("NFC", text).casefold().replace("’", "'")
    out: list[str] = []
    for w in _term().findall(folded):
        if is_cjk(w[0]):
            out.extend(ngrams(w))
        else:
            out.append(w)
    return out


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the words of ``text`` (see the module's description)."""
    return [m.span() for m in _word().finditer(text)]


def words(text: str) -> list[str]:
    """The words of ``text``, folded (:func:`fold`)."""
    return [fold(text[a:b]) for a, b in word_spans(text)]


@lru_cache(maxsize=1 << 16)
def fold(word: str) -> str:
    """A word or name as compared: NFC, case-folded, typographic apostrophe plain,
    possessive ``'s`` (or a trailing apostrophe) off. Turkish dotless ``ı`` compares as
    ``i``: upper-cased it is ``I``, so "KADIKÖY" is how a user types Kadıköy in capitals."""
    out = unicodedata.normalize("NFC", word).casefold().replace("’", "'").replace("ı", "i")
    if out.endswith("'s") and len(out) > 2:
        return out[:-2]
    return out.rstrip("'")


def is_cjk(char: str) -> bool:
    """A kana or Han character (the scripts written without spaces between words)."""
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in _CJK_RANGES) or char in "々〆〇ー"


def is_kana(char: str) -> bool:
    return 0x3040 <= ord(char) <= 0x309F


def is_katakana(char: str) -> bool:
    code = ord(char)
    return 0x30A0 <= code <= 0x30FF or 0x31F0 <= code <= 0x31FF or 0xFF66 <= code <= 0xFF9F


@lru_cache(maxsize=4096)
def is_latin(char: str) -> bool:
    """A Latin letter, with or without diacritics (``é``, ``Ł``, ``ß``, ``ı``)."""
    if char.isascii():
        return char.isalpha()
    return char.isalpha() and unicodedata.name(char, "").startswith("LATIN")


def cased(word: str) -> bool:
    """Whether ``word`` is written in a script with capitals (Latin, Greek, Cyrillic,
    Armenian, ...): its letters change with case."""
    return any(c.lower() != c.upper() for c in word)


def latin_share(text: str, sample: int = 2000) -> float:
    """The share of ``text``'s letters (the first ``sample`` of them) that are Latin; 1.0
    for a text without letters."""
    if text.isascii():
        return 1.0
    latin = total = 0
    for c in text:
        if c.isalpha():
            total += 1
            latin += is_latin(c)
            if total >= sample:
                break
    return latin / total if total else 1.0


def segments(word: str) -> list[str]:
    """A token cut where its script changes between Han, hiragana and katakana (the
    tokenizer's rule, for tokens another tokenizer made)."""
    return [word[a:b] for a, b in word_spans(word)] or [word]


def ngrams(word: str, n: int = 2) -> list[str]:
    """A Han or kana run as its overlapping character ``n``-grams (itself when shorter);
    any other word as itself."""
    if len(word) <= n or not all(is_cjk(c) for c in word):
        return [word]
    return [word[i : i + n] for i in range(len(word) - n + 1)]


def match_terms(text: str) -> set[str]:
    """What a name or query is matched on: its folded words, and the character bigrams
    of its runs in scripts without spaces (a Han run is not segmented: "北京" meets
    "我住在北京" by its bigram)."""
    return {g for w in words(text) for g in ngrams(w)}


def sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (surrounding whitespace excluded)."""
    out: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        _keep(text, start, m.end(), out)
        start = m.end()
    _keep(text, start, len(text), out)
    return out


def _keep(text: str, start: int, end: int, out: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start and any(c.isalnum() for c in text[start:end]):
        out.append((start, end))
