"""Keywords and noun phrases of a text, read off its parse.

* :func:`keywords`: the lemmas of its content words (nouns, proper nouns, verbs,
  adjectives, numbers; no stop word, greeting or interjection), in order of first use:
  "went camping with my kids" gives ``go, camp, kid``. Names keep their letters
  (folded: ``zürich``). In other scripts: the words that are no function word of a
  language of their script, and the Han and katakana pieces of Japanese (hiragana is
  grammar).
* :func:`noun_phrases`: the parse's noun chunks headed by a common noun, leading
  determiners, possessives and greetings off ("my new pottery class" gives
  ``new pottery class``, its head ``class``, and says it was determined); none made only
  of function words (spaCy's stop words: "side", "mine") or greetings.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from memstrata.nlp.names import GREETINGS, stop_words
from memstrata.nlp.pipeline import analyse
from memstrata.nlp.script import fold, is_cjk, is_kana, is_latin, segments, word_spans

_CONTENT_POS = frozenset("NOUN PROPN VERB ADJ NUM".split())
_LEAD_OFF = frozenset("det poss predet case".split())


@dataclass(frozen=True)
class Phrase:
    """A noun phrase as written (determiners off), its span and its head's lemma."""

    text: str
    start: int
    end: int
    head: str
    #: it followed a determiner or possessive ("the beach", "my family")
    determined: bool = False


def keywords(text: str, *, lemmas: bool = True) -> list[str]:
    """The lemmas of ``text``'s content words, distinct, in order (see the module);
    ``lemmas=False``: the same words as written (folded)."""
    return list(_keywords(text, lemmas))


@lru_cache(maxsize=8192)
def _keywords(text: str, lemmas: bool = True) -> tuple[str, ...]:
    """Cached: the designs of one build read the same turns."""
    (doc,) = analyse([text])
    out: list[str] = []
    if not doc.has_annotation("DEP"):
        for a, b in word_spans(text):
            w = text[a:b]
            low = fold(w)
            if is_cjk(w[0]):
                if not all(is_kana(c) or c == "ー" for c in w):
                    out.append(low)
            elif len(low) >= 2 and low not in GREETINGS and low not in stop_words(w):
                out.append(low)
        return tuple(dict.fromkeys(out))
    for t in doc:
        # a word of another script is content whatever the English tagger made of it
        # ("about 서울", tagged a preposition)
        other = not t.text.isascii() and any(c.isalpha() and not is_latin(c) for c in t.text)
        if (t.pos_ not in _CONTENT_POS and not other) or t.is_stop or fold(t.text) in GREETINGS:
            continue
        if any(is_cjk(c) for c in t.text):
            out += [fold(p) for p in segments(t.text) if not all(is_kana(c) for c in p)]
            continue
        if not any(c.isalnum() for c in t.text):
            continue
        word = t.text if t.pos_ in ("PROPN", "NUM") or not lemmas else t.lemma_
        low = fold(word)
        if len(low) >= 2 or low.isdigit() or other:
            out.append(low)
    return tuple(dict.fromkeys(out))


def noun_phrases(text: str) -> list[Phrase]:
    """The noun chunks of ``text`` headed by a common noun (see the module)."""
    return list(_noun_phrases(text))


@lru_cache(maxsize=8192)
def _noun_phrases(text: str) -> tuple[Phrase, ...]:
    (doc,) = analyse([text])
    if not doc.has_annotation("DEP"):
        return ()
    out: list[Phrase] = []
    for chunk in doc.noun_chunks:
        root = chunk.root
        if root.pos_ != "NOUN":
            continue
        # the determiner or possessor with all its words ("Acme Corp's office": office)
        lead = [c.right_edge.i for c in root.children if c.dep_ in _LEAD_OFF and c.i < root.i]
        cut = max(lead, default=chunk.start - 1)
        toks = [t for t in chunk if t.i > cut]
        while toks and (toks[0].pos_ in ("DET", "INTJ", "PART") or _greets(toks[0].text)):
            toks = toks[1:]
        determined = bool(lead)
        if not toks or toks[-1].i < root.i:
            continue
        if all(t.is_stop or _greets(t.text) or not any(c.isalnum() for c in t.text) for t in toks):
            continue  # "-" of a split "e-bike", "mine", "yes": no phrase of function words
        a, b = toks[0].idx, toks[-1].idx + len(toks[-1].text)
        out.append(Phrase(text[a:b], a, b, fold(root.lemma_), determined))
    return tuple(out)


def _greets(word: str) -> bool:
    return fold(word) in GREETINGS
