"""The names a text mentions, read off its parse (:func:`names`).

English text (the parse of :func:`memstrata.nlp.pipeline.parse`): a name is a run of
*name words*, and a name word is a token that

* lies in a named entity of a naming kind (person, organisation, place, nationality,
  product, event, work, law, language; not a date, time, quantity or number), or is
  tagged a proper noun, or is a capitalised word not opening its sentence (the small
  model tags "how's Cardiff treating you" a noun, "Kiss and Tell" two verbs; a word in
  capitals is no name unless tagged one) or a capitalised bare singular noun that opens
  its sentence as its subject ("Alice lives in Leeds": a common noun there would need a
  determiner), or is written in another script than
  Latin (a Russian or Japanese name in English text), or is a known name (a speaker);
* and is none of: an interjection or greeting ("Hey", "Wow", "Woohoo"), a pronoun,
  determiner, auxiliary or particle (the possessive ``'s``: "Evan's" is Evan), a
  function word, a word in lower case that no entity covers.

Name words next to each other (only spaces between, or a hyphen: "Jean-Luc") form one
name when they belong to one entity or one is the other's head ("Mladá Boleslav", which
the model labels as two entities, is one compound); inside an entity, connecting words
stay ("Bank of America"), leading determiners do not ("the Bank of America" is "Bank of
America"). A token in a script written without spaces is cut at its script changes and
its hiragana dropped ("田中さん" is 田中; an honorific such as 様 comes off).

Other text (the multilingual tokenizer, no tags): capitalised words in scripts with
capitals (Cyrillic, Greek, Latin, ...), runs joined, a word opening its sentence only
when it is no function word of a language of its script (spaCy's stop word lists); in
Japanese, Han and katakana runs of two characters or more (the nouns and names between
the grammar that hiragana writes); in Chinese, which has no such cue, only Han runs of
at most ``LONGEST_HAN`` characters standing alone (a longer run is matched by its
bigrams, never taken whole as a name). Scripts without capitals (Arabic, Hebrew,
Devanagari, Thai, Hangul) give names only inside English text.
"""

from __future__ import annotations

import calendar
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from memstrata.nlp.pipeline import analyse
from memstrata.nlp.script import (
    HONORIFICS,
    cased,
    fold,
    is_cjk,
    is_kana,
    is_katakana,
    is_latin,
    sentences,
    word_spans,
)

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

#: entity labels that name something (spaCy's OntoNotes scheme)
NAME_LABELS = frozenset(
    "PERSON NORP FAC ORG GPE LOC PRODUCT EVENT WORK_OF_ART LAW LANGUAGE".split()
)
#: words that greet, thank, exclaim or fill: never part of a name, whatever their tag
GREETINGS = frozenset(
    """
    hi hey heya hiya hello howdy yo dear thanks thank thx ty congrats congratulations
    wow whoa woah woohoo yay yeah yes yep yup no nope nah oh ooh ah aw aww awww hmm um
    uh er ok okay okey sure please sorry bye goodbye cheers haha hahaha lol omg lmao
    btw gosh geez jeez wowza ugh oops hooray bravo welcome morning evening night
    well so now great cool nice awesome amazing
    """.split()
)
#: greeting words that are also words of names: part of one inside a naming entity of
#: several words or a place, not opening the sentence ("drove to Nice", "the Great
#: Barrier Reef", "Good Morning America"; never "Nice to meet you", "Well, Jonas")
_SOFT = frozenset(
    "well so now great cool nice awesome amazing morning evening night welcome dear".split()
)
_CLOSED_POS = frozenset("INTJ PRON DET AUX ADP CCONJ SCONJ PART PUNCT SYM SPACE NUM".split())
# Inside one entity these join its name words ("Bank of America", "Romeo and Juliet").
_CONNECTORS = frozenset("of the de da del di du la le van von der den and & for on y e".split())
_DETERMINERS = frozenset("a an the this that these those my your his her its our their".split())
#: month and weekday names and their abbreviations: dates, never names
_CALENDAR = frozenset(
    w.casefold()
    for w in (*calendar.month_name, *calendar.month_abbr, *calendar.day_name, *calendar.day_abbr)
    if w
)
#: a Han run of Chinese (no kana in the text) longer than this is a clause, not a name
LONGEST_HAN = 4


@dataclass(frozen=True)
class Name:
    """A name as written (possessive, determiners and greetings off) and its span."""

    text: str
    start: int
    end: int
    label: str = ""  # the entity label, "PROPN", or "" (a script or known-name rule)

    @property
    def key(self) -> str:
        return name_key(self.text)


def name_key(name: str) -> str:
    """A name's identity: its folded words (:func:`~memstrata.nlp.script.fold`: NFC,
    case-folded, possessive off) without leading determiners, joined by spaces."""
    name = name.strip()
    if name[-2:].casefold() in ("'s", "’s") and len(name) > 2:
        name = name[:-2]  # a possessive after any script ("北京's")
    toks = [fold(name[a:b]) for a, b in word_spans(name)]
    while len(toks) > 1 and toks[0] in _DETERMINERS:
        toks = toks[1:]
    return " ".join(toks)


def names(text: str, known: Iterable[str] = ()) -> list[Name]:
    """The names ``text`` mentions, in order (see the module's description). ``known``:
    names to take wherever they stand, such as the speakers of a conversation."""
    return list(_names(text, frozenset(fold(k) for k in known)))


@lru_cache(maxsize=8192)
def _names(text: str, wanted: frozenset[str]) -> tuple[Name, ...]:
    """Cached: the designs of one build ask for the names of the same turns, sentence by
    sentence."""
    (doc,) = analyse([text])
    if doc.has_annotation("DEP"):
        return tuple(_english(doc, wanted))
    return tuple(_other(text, wanted))


def names_of(texts: Sequence[str], known: Iterable[str] = ()) -> list[list[Name]]:
    """:func:`names` of many texts, parsed together (one pass of the pipeline)."""
    analyse(texts)
    wanted = list(known)
    return [names(t, wanted) for t in texts]


# English ----------------------------------------------------------------------------------
def _english(doc: Doc, known: frozenset[str]) -> list[Name]:
    ent_of: dict[int, int] = {}
    label: dict[int, str] = {}
    blocked: set[int] = set()
    for n, ent in enumerate(doc.ents):
        for t in ent:
            if ent.label_ in NAME_LABELS:
                ent_of[t.i] = n
                label[t.i] = ent.label_
            else:
                blocked.add(t.i)  # "Friday" (a date), "Two" (a number)
    ents = list(doc.ents)
    word = [
        _name_word(t, ents[ent_of[t.i]].text if t.i in ent_of else None, t.i in blocked, known)
        for t in doc
    ]
    out: list[Name] = []
    i = 0
    while i < len(doc):
        if not word[i]:
            i += 1
            continue
        j = i
        while True:
            nxt = _joins(doc, word, ent_of, j)
            if nxt is None:
                break
            j = nxt
        out.extend(_emit(doc, i, j, label.get(i) or ("PROPN" if doc[i].pos_ == "PROPN" else "")))
        i = j + 1
    return _nicknames(doc.text, out)


def _nicknames(text: str, found: list[Name]) -> list[Name]:
    """A quoted name between two names is a nickname inside one (Richard Elmer "Dick"
    Humbert): the three are one name."""
    out: list[Name] = []
    n = 0
    while n < len(found):
        if n + 2 < len(found):
            a, q, b = found[n], found[n + 1], found[n + 2]
            left, right = text[a.end : q.start], text[q.end : b.start]
            if left in (' "', " “") and right in ('" ', "” "):
                out.append(Name(text[a.start : b.end], a.start, b.end, a.label))
                n += 3
                continue
        out.append(found[n])
        n += 1
    return out


def _name_word(t: Token, entity: str | None, blocked: bool, known: frozenset[str]) -> bool:
    """Whether ``t`` is a name word; ``entity``: the text of the naming entity it lies in."""
    text = t.text
    low = fold(text)
    if not any(c.isalnum() for c in text):
        return False
    if low in GREETINGS and not (
        low in _SOFT
        and entity is not None
        and (" " in entity or t.ent_type_ in ("GPE", "LOC", "FAC"))
        and not t.is_sent_start
    ):
        return False
    if low in known:
        return True
    if not text.isascii() and any(c.isalpha() and not is_latin(c) for c in text):  # a script
        return t.pos_ not in ("PUNCT", "SYM", "SPACE")
    capital = text[:1].isupper() or text[:1].isdigit()
    if blocked:
        # a date or a quantity ("Friday", "Two"), but not a proper noun the model read
        # into one ("went to İzmir with", "miss Zoë these days")
        return t.pos_ == "PROPN" and capital and not t.is_sent_start and low not in _CALENDAR
    if entity is not None:
        # a capitalised word of an entity, whatever its tag ("Kiss" in a film's title;
        # "Zoë", which the small model tags a pronoun); a word in lower case only when
        # the whole entity is ("jonas")
        if t.pos_ in ("PRON", "DET", "PART", "PUNCT", "ADP", "CCONJ", "SCONJ") and (
            t.is_stop or not capital
        ):
            return False
        return capital or entity == entity.lower()
    if t.pos_ in _CLOSED_POS or t.is_stop:
        return False
    if t.pos_ == "PROPN":
        return capital
    if not capital or (len(text) > 1 and text.isupper()):
        return False  # a word in capitals is no name unless tagged one
    if t.is_sent_start:
        # a bare singular noun as the subject: English wants a determiner before a
        # common one ("Alice lives in Leeds", which the small model reads as a noun)
        return (
            t.tag_ == "NN"
            and t.dep_ in ("nsubj", "nsubjpass")
            and not any(c.dep_ in ("det", "poss", "amod", "compound") for c in t.children)
        )
    # a capitalised word inside a sentence, whatever the tagger made of it ("Cardiff"
    # read as a noun, "Tell" of "Kiss and Tell" as a verb)
    return True


def _joins(doc: Doc, word: list[bool], ent_of: dict[int, int], j: int) -> int | None:
    """The last token of the name word that continues the name ending at token ``j``
    (over a connector or hyphen inside it), or None when the name ends at ``j``."""
    a = doc[j]
    k = j + 1
    # a hyphen written tight between two name words ("Jean-Luc", "Saint-Étienne")
    if k + 1 < len(doc) and doc[k].text in "-‐" and not a.whitespace_ and not doc[k].whitespace_:
        if word[k + 1]:
            return k + 1
        # a part in lower case inside the entity ("Chiang Kai-shek"), not "Zürich-based"
        same = a.i in ent_of and ent_of.get(k + 1) == ent_of[a.i] == ent_of.get(k)
        return k + 1 if same and doc[k + 1].is_alpha else None
    if a.whitespace_ not in (" ", ""):
        return None
    # connecting words inside one entity ("Bank of America")
    if a.i in ent_of:
        m = k
        while m < len(doc) and not word[m] and ent_of.get(m) == ent_of[a.i]:
            if doc[m].lower_ not in _CONNECTORS or doc[m - 1].whitespace_ != " ":
                return None
            if ent_of.get(doc[m].head.i) != ent_of[a.i]:
                return None  # "my Polo on the Rheinkniebrücke": "on" hangs on the verb
            m += 1
        if m > k and m < len(doc) and word[m] and ent_of.get(m) == ent_of[a.i]:
            return m
    if k >= len(doc) or not word[k] or a.whitespace_ != " ":
        return None
    b = doc[k]
    if a.i in ent_of and ent_of.get(b.i) == ent_of[a.i]:
        return k
    if a.text[0].isalpha() and b.text[0].isalpha() and is_latin(a.text[0]) != is_latin(b.text[0]):
        return None  # "Ancient Greek πτερον": a name ends where its script does
    if a.head.i == b.i or b.head.i == a.i or (a.pos_ == b.pos_ == "PROPN"):
        return k
    return None


def _emit(doc: Doc, i: int, j: int, label: str) -> list[Name]:
    """The name over tokens ``i..j``; a token in a script without spaces yields its Han
    and katakana pieces instead (a Japanese name, honorific off)."""
    span = doc[i : j + 1]
    if not any(is_cjk(c) for c in span.text):
        text = span.text.rstrip("'’-")
        if text.endswith(".") and "." not in span[-1].text[:-1] and _ends_sentence(doc, span.end):
            text = text[:-1]  # "Plan B. Then": the full stop, read into the token
        return [Name(text, span.start_char, span.start_char + len(text), label)] if text else []
    return _cjk_names(doc.text, span.start_char, span.end_char, label)


def _ends_sentence(doc: Doc, i: int) -> bool:
    """Whether token ``i`` (past the name) is the end of the text or a word that opens a
    sentence."""
    return i >= len(doc) or doc[i].text[:1].isupper() or doc[i].is_sent_start is True


def _cjk_names(text: str, start: int, end: int, label: str = "", shortest: int = 1) -> list[Name]:
    """Han and katakana runs in ``text[start:end]`` (hiragana dropped, honorifics off),
    other words joined as they stand, at least ``shortest`` characters long."""
    out: list[Name] = []
    for a, b in word_spans(text[start:end]):
        piece = text[start + a : start + b]
        if all(is_kana(c) or c == "ー" for c in piece):
            continue  # hiragana: particles and endings
        for h in HONORIFICS:
            if piece.endswith(h) and len(piece) > len(h):
                piece = piece[: -len(h)]
                b = a + len(piece)
                break
        if len(piece) >= shortest or not is_cjk(piece[0]):
            out.append(Name(piece, start + a, start + b, label))
    return out


# other scripts ----------------------------------------------------------------------------
def _other(text: str, known: frozenset[str]) -> list[Name]:
    out: list[Name] = []
    kana = any(is_kana(c) or is_katakana(c) for c in text)  # Japanese, not Chinese
    for s, e in sentences(text):
        spans = word_spans(text[s:e])
        n = 0
        while n < len(spans):
            a, b = spans[n]
            w = text[s + a : s + b]
            if is_cjk(w[0]):
                if kana or len(w) <= LONGEST_HAN:
                    out.extend(_cjk_names(text, s + a, s + b, "", shortest=2))
                n += 1
                continue
            if not _capital(w, n == 0, known):
                n += 1
                continue
            m = n
            while m + 1 < len(spans) and text[s + spans[m][1] : s + spans[m + 1][0]] == " ":
                nxt = text[s + spans[m + 1][0] : s + spans[m + 1][1]]
                if not _capital(nxt, False, known) or is_cjk(nxt[0]):
                    break
                m += 1
            out.append(Name(text[s + a : s + spans[m][1]], s + a, s + spans[m][1]))
            n = m + 1
    return out


def _capital(word: str, opens: bool, known: frozenset[str]) -> bool:
    """A capitalised word in a script with capitals; opening a sentence, one that is no
    function word of a language written in its script ("Дмитрий", not "Это")."""
    low = fold(word)
    if low in known:
        return True
    if not (cased(word) and word[:1].isupper()) or low in GREETINGS:
        return False
    return not opens or low not in stop_words(word)


#: spaCy's languages (stop words only: no model) by the script they are written in
_LANGUAGES = {
    "CYRILLIC": ("ru", "uk", "bg", "sr", "mk"),
    "GREEK": ("el",),
    "ARMENIAN": ("hy",),
    "LATIN": ("en", "de", "fr", "es", "it", "pt", "nl", "pl", "cs", "da", "sv", "tr"),
}


def stop_words(word: str) -> frozenset[str]:
    """The function words (folded) of the languages written in ``word``'s script, as
    spaCy lists them (no model needed); empty for a script not listed."""
    return _stop_words(unicodedata.name(word[:1], "?").split()[0])


@cache
def _stop_words(script: str) -> frozenset[str]:
    import importlib

    out: set[str] = set()
    for lang in _LANGUAGES.get(script, ()):
        out |= importlib.import_module(f"spacy.lang.{lang}.stop_words").STOP_WORDS
    return frozenset(fold(w) for w in out)
