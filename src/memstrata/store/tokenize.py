"""The SQLite store's full-text tokenizer, in Python, so both stores rank alike.

The SQLite store indexes with FTS5's ``porter unicode61 remove_diacritics 2``. This module
splits and folds text the same way, and stems with the same variant of Porter's algorithm
(FTS5's, which differs from NLTK's in details: it works on UTF-8 bytes, leaves tokens of
fewer than 3 or more than 64 bytes alone and has its own step 2 list), so that the
PostgreSQL store's postings hold exactly the terms FTS5 would. Character classes come from
Python's :mod:`unicodedata`; FTS5's tables are from an older Unicode version, so code
points assigned since may be classed differently (letters of recent scripts, mostly).
"""

from __future__ import annotations

import sqlite3
import threading
import unicodedata

#: combining marks that FTS5 treats as part of a token and drops (U+0300..U+0331)
_DIACRITIC_MASKS = (0x08029FDF, 0x000361F8)
_MAX_STEM = 64


def _is_diacritic(code: int) -> bool:
    if code < 768 or code > 817:
        return False
    if code < 768 + 32:
        return bool(_DIACRITIC_MASKS[0] & (1 << (code - 768)))
    return bool(_DIACRITIC_MASKS[1] & (1 << (code - 768 - 32)))


def _unicode_class(char: str) -> str | None:
    """From :mod:`unicodedata`: None for a separator, else the character folded (lower
    case; a Latin letter with any number of marks becomes its bare ASCII letter)."""
    category = unicodedata.category(char)
    if not (category[0] in "LN" or category in ("Co", "Cn")):
        return "" if _is_diacritic(ord(char)) else None
    code = ord(char)
    if code >= 65536:
        return chr(code + 40) if 66560 <= code < 66600 else char
    lower = char.lower()
    parts = unicodedata.normalize("NFD", lower)
    if parts[0].isascii() and parts[0].isalpha() and all(map(unicodedata.combining, parts[1:])):
        return parts[0]
    return lower if len(lower) == 1 else char


class _Classes:
    """How FTS5 classes and folds non-ASCII characters, asked of the SQLite library itself
    (one probe per character not seen before, cached): its tables follow the Unicode
    version it was built with, which :mod:`unicodedata` does not (emoji, for one, are
    token characters to FTS5). Without FTS5, :func:`_unicode_class` stands in."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[str, str | None] = {}
        try:
            conn = sqlite3.connect(":memory:", check_same_thread=False)
            conn.execute(
                "CREATE VIRTUAL TABLE f USING fts5(body, tokenize='unicode61 remove_diacritics 2')"
            )
            conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
            self._conn: sqlite3.Connection | None = conn
        except sqlite3.Error:
            self._conn = None

    def learn(self, chars: set[str]) -> dict[str, str | None]:
        """The classes of ``chars`` (non-ASCII): None for a separator, else the fold."""
        with self._lock:
            new = sorted(c for c in chars if c not in self._known)
            if new:
                self._known.update(self._probe(new))
            return self._known

    def _probe(self, chars: list[str]) -> dict[str, str | None]:
        if self._conn is None or any("\ud800" <= c <= "\udfff" for c in chars):
            return {c: _unicode_class(c) for c in chars}
        conn = self._conn
        conn.executemany(
            "INSERT INTO f(rowid, body) VALUES (?, ?)",
            [(i + 1, f"a{c}b") for i, c in enumerate(chars)],
        )
        found: dict[int, list[str]] = {}
        for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
            found.setdefault(doc, []).append(term)
        conn.execute("DELETE FROM f")
        out: dict[str, str | None] = {}
        for i, char in enumerate(chars):
            terms = found.get(i + 1, [])
            out[char] = terms[0][1:-1] if len(terms) == 1 else None
        return out


_CLASSES = _Classes()


def split(text: str) -> list[str]:
    """unicode61's tokens of ``text``, folded (before stemming)."""
    classes = _CLASSES.learn({c for c in text if c >= "\x80"}) if not text.isascii() else {}
    tokens: list[str] = []
    current: list[str] = []
    in_token = False
    for char in text:
        if char < "\x80":
            if char.isalnum():
                current.append(char.lower())
                in_token = True
                continue
            fold = None
        else:
            fold = classes[char]
            # a combining mark FTS5 drops continues a token but never starts one
            if fold == "" and not in_token:
                fold = None
        if fold is not None:
            current.append(fold)
            in_token = True
        elif in_token:
            tokens.append("".join(current))
            current, in_token = [], False
    if in_token:
        tokens.append("".join(current))
    return tokens


def tokenize(text: str) -> list[str]:
    """The terms FTS5's ``porter unicode61 remove_diacritics 2`` makes of ``text``, in
    order (a term per position)."""
    return [stem(t) for t in split(text)]


# Porter, as FTS5 runs it: on the token's UTF-8 bytes ------------------------------------
def stem(token: str) -> str:
    raw = token.encode("utf-8")
    if len(raw) > _MAX_STEM or len(raw) < 3:
        return token
    return _stem(raw).decode("utf-8", errors="replace")


def _vowel(c: int, y_is_vowel: bool) -> bool:
    return c in b"aeiou" or (y_is_vowel and c == ord("y"))


def _gobble_vc(word: bytes, prev_cons: bool) -> int:
    """Length of the leading [C]V+C of ``word`` (0 if there is none)."""
    cons = prev_cons
    i = 0
    while i < len(word):
        cons = not _vowel(word[i], cons)
        if not cons:
            break
        i += 1
    i += 1
    while i < len(word):
        cons = not _vowel(word[i], cons)
        if cons:
            return i + 1
        i += 1
    return 0


def _m_gt0(stem_: bytes) -> bool:
    return bool(_gobble_vc(stem_, False))


def _m_gt1(stem_: bytes) -> bool:
    n = _gobble_vc(stem_, False)
    return bool(n) and bool(_gobble_vc(stem_[n:], True))


def _m_eq1(stem_: bytes) -> bool:
    n = _gobble_vc(stem_, False)
    return bool(n) and not _gobble_vc(stem_[n:], True)


def _ostar(stem_: bytes) -> bool:
    if not stem_ or stem_[-1] in b"wxy":
        return False
    mask, cons = 0, False
    for c in stem_:
        cons = not _vowel(c, cons)
        mask = (mask << 1) + int(cons)
    return (mask & 7) == 5


def _m_gt1_s_or_t(stem_: bytes) -> bool:
    return bool(stem_) and stem_[-1] in b"st" and _m_gt1(stem_)


def _has_vowel(stem_: bytes) -> bool:
    return any(_vowel(c, i > 0) for i, c in enumerate(stem_))


# (suffix, condition on the stem, replacement), grouped by the word's second-last byte: as
# in FTS5, only the first suffix that matches in a group is tried.
_Rule = tuple[bytes, object, bytes]
_STEP2: dict[int, list[_Rule]] = {
    ord("a"): [(b"ational", _m_gt0, b"ate"), (b"tional", _m_gt0, b"tion")],
    ord("c"): [(b"enci", _m_gt0, b"ence"), (b"anci", _m_gt0, b"ance")],
    ord("e"): [(b"izer", _m_gt0, b"ize")],
    ord("g"): [(b"logi", _m_gt0, b"log")],
    ord("l"): [
        (b"bli", _m_gt0, b"ble"),
        (b"alli", _m_gt0, b"al"),
        (b"entli", _m_gt0, b"ent"),
        (b"eli", _m_gt0, b"e"),
        (b"ousli", _m_gt0, b"ous"),
    ],
    ord("o"): [(b"ization", _m_gt0, b"ize"), (b"ation", _m_gt0, b"ate"), (b"ator", _m_gt0, b"ate")],
    ord("s"): [
        (b"alism", _m_gt0, b"al"),
        (b"iveness", _m_gt0, b"ive"),
        (b"fulness", _m_gt0, b"ful"),
        (b"ousness", _m_gt0, b"ous"),
    ],
    ord("t"): [(b"aliti", _m_gt0, b"al"), (b"iviti", _m_gt0, b"ive"), (b"biliti", _m_gt0, b"ble")],
}
_STEP3: dict[int, list[_Rule]] = {
    ord("a"): [(b"ical", _m_gt0, b"ic")],
    ord("s"): [(b"ness", _m_gt0, b"")],
    ord("t"): [(b"icate", _m_gt0, b"ic"), (b"iciti", _m_gt0, b"ic")],
    ord("u"): [(b"ful", _m_gt0, b"")],
    ord("v"): [(b"ative", _m_gt0, b"")],
    ord("z"): [(b"alize", _m_gt0, b"al")],
}
_STEP4: dict[int, list[_Rule]] = {
    ord("a"): [(b"al", _m_gt1, b"")],
    ord("c"): [(b"ance", _m_gt1, b""), (b"ence", _m_gt1, b"")],
    ord("e"): [(b"er", _m_gt1, b"")],
    ord("i"): [(b"ic", _m_gt1, b"")],
    ord("l"): [(b"able", _m_gt1, b""), (b"ible", _m_gt1, b"")],
    ord("n"): [
        (b"ant", _m_gt1, b""),
        (b"ement", _m_gt1, b""),
        (b"ment", _m_gt1, b""),
        (b"ent", _m_gt1, b""),
    ],
    ord("o"): [(b"ion", _m_gt1_s_or_t, b""), (b"ou", _m_gt1, b"")],
    ord("s"): [(b"ism", _m_gt1, b"")],
    ord("t"): [(b"ate", _m_gt1, b""), (b"iti", _m_gt1, b"")],
    ord("u"): [(b"ous", _m_gt1, b"")],
    ord("v"): [(b"ive", _m_gt1, b"")],
    ord("z"): [(b"ize", _m_gt1, b"")],
}


def _apply(word: bytes, table: dict[int, list[_Rule]]) -> bytes:
    if len(word) < 2:
        return word
    for suffix, cond, out in table.get(word[-2], []):
        if len(word) > len(suffix) and word.endswith(suffix):
            base = word[: -len(suffix)]
            return base + out if cond(base) else word  # type: ignore[operator]
    return word


def _step1b(word: bytes) -> tuple[bytes, bool]:
    """(word, whether -ed or -ing was removed)."""
    if len(word) < 2:
        return word, False
    if word[-2] == ord("e"):
        if len(word) > 3 and word.endswith(b"eed"):
            return (word[:-1], False) if _m_gt0(word[:-3]) else (word, False)
        if word.endswith(b"ed") and _has_vowel(word[:-2]):
            return word[:-2], True
    elif word[-2] == ord("n") and word.endswith(b"ing") and _has_vowel(word[:-3]):
        return word[:-3], True
    return word, False


def _stem(word: bytes) -> bytes:
    # step 1a
    if word.endswith(b"s"):
        if word[-2] == ord("e"):
            if (len(word) > 4 and word.endswith(b"sses")) or (len(word) > 3 and word[-3] == 105):
                word = word[:-2]
            else:
                word = word[:-1]
        elif word[-2] != ord("s"):
            word = word[:-1]
    word, cut = _step1b(word)
    if cut and len(word) >= 2:
        for suffix, out in ((b"at", b"ate"), (b"bl", b"ble"), (b"iz", b"ize")):
            if len(word) > 2 and word[-2] == suffix[0] and word.endswith(suffix):
                word = word[:-2] + out
                break
        else:
            last = word[-1]
            if not _vowel(last, False) and last not in b"lsz" and last == word[-2]:
                word = word[:-1]
            elif _m_eq1(word) and _ostar(word):
                word = word + b"e"
    # step 1c
    if word and word[-1] == ord("y") and _has_vowel(word[:-1]):
        word = word[:-1] + b"i"
    word = _apply(word, _STEP2)
    word = _apply(word, _STEP3)
    word = _apply(word, _STEP4)
    # step 5a
    if word and word[-1] == ord("e"):
        base = word[:-1]
        if _m_gt1(base) or (_m_eq1(base) and not _ostar(base)):
            word = base
    # step 5b
    if len(word) > 1 and word[-1] == ord("l") and word[-2] == ord("l") and _m_gt1(word[:-1]):
        word = word[:-1]
    return word
