"""Why a hit was found, and a score that means the same for every query.

A recipe ranks by fused reciprocal ranks (:mod:`memstrata.engine.fusion`): the first hit
of any query scores the same, found or not, so that score orders one result and says
nothing across queries. The relevance score here reads what the routes themselves
measured: the hit's cosine to the query (an episode's stored vector; a record's own
vector, or its best source turn's) and the share of the query's search terms its text
holds (as the full-text index stems both). A logistic curve maps the two to 0..1,
fitted on the first 10 hits of the ``default`` recipe over the LoCoMo dev split, each hit
labelled by whether it is an evidence turn of its question (``studies/relevance_fit.py``).
So a score is a probability: of the hits scoring about 0.3 there, about 3 in 10 were
evidence, and the same held on REALTALK dev, which the fit never saw
(docs/benchmarks.md, "A score that means the same for every query"). A hit that shares
nothing with the query scores about 0.01; one that holds every term and is close in
meaning about 0.45: LoCoMo marks one or two turns per question, so even a turn that
holds the answer is marked less than half the time.

Nothing here ranks: the hits keep the recipe's order, and the explanation
(:class:`~memstrata.models.Why`) is computed for the hits a search returns only.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from memstrata.embed.base import Embedder, content_hash
from memstrata.models import Hit, Why
from memstrata.retrieval import documents
from memstrata.retrieval.text import META_WORDS, content_terms
from memstrata.store.base import Store
from memstrata.store.tokenize import tokenize

#: the logistic's weights on the cosine and on the share of terms, and its bias (fitted;
#: see the module's docstring)
SIMILARITY_WEIGHT = 0.53
SHARE_WEIGHT = 3.72
BIAS = -4.36


def search_terms(query: str) -> list[str]:
    """The query's content terms, less the words about the conversation itself."""
    terms = content_terms(query)
    return [t for t in terms if t not in META_WORDS] or terms


def matched(terms: Sequence[str], text: str) -> list[str]:
    """The ``terms`` the text holds as the full-text index reads both (FTS5's Porter
    stems, :func:`~memstrata.store.tokenize.tokenize`: "camped" holds
    "camping"), which is how BM25 matched them. A search asks this of every hit it
    returns, so only the text's words that begin as a word of a term's stem must (the
    stem less its last letter: Porter rewrites endings only) are stemmed, each once per
    process."""
    wanted = [(t, _stemmed(t)) for t in terms]
    heads = tuple({s[:-1] or s for _, stems in wanted for s in stems})
    if not heads:
        return []
    held: set[str] = set()
    for word in _PART.findall(_folded(text)):
        if word.startswith(heads):
            held.update(_stemmed(word))
    return [t for t, stems in wanted if stems and held.issuperset(stems)]


#: a run of the characters the full-text index keeps in a token
_PART = re.compile(r"[^\W_]+")


@lru_cache(maxsize=65536)
def _stemmed(word: str) -> tuple[str, ...]:
    return tuple(tokenize(word))


def _folded(text: str) -> str:
    """Lower case without diacritics, as the index folds words before stemming."""
    text = text.lower()
    if text.isascii():
        return text
    parts = unicodedata.normalize("NFD", text)
    return "".join(c for c in parts if not unicodedata.combining(c))


def score(similarity: float | None, share: float) -> float:
    """Relevance in 0..1 from a cosine and a share of the query's terms (a hit without a
    vector counts a cosine of 0)."""
    z = BIAS + SIMILARITY_WEIGHT * (similarity or 0.0) + SHARE_WEIGHT * share
    return round(1.0 / (1.0 + math.exp(-z)), 4)


def explain(
    store: Store,
    embedder: Embedder,
    namespace: str,
    query: str,
    qvec: np.ndarray | None,
    hits: Sequence[Hit],
) -> None:
    """Fill each hit's ``why`` (its fused score, similarity and matched terms, beside what
    its route recorded) and set its ``score`` to the relevance; in place. ``qvec``: the
    query's unit vector (None: the similarities its routes did not give stay unknown)."""
    terms = search_terms(query)
    sims = similarities(store, embedder, namespace, qvec, lacking(hits)) if qvec is not None else {}
    for h in hits:
        why = h.why if h.why is not None else Why()
        why.fused = h.score
        if why.similarity is None:
            why.similarity = sims.get(id(h))
        why.terms = matched(terms, h.text)
        h.why = why
        h.score = score(why.similarity, len(why.terms) / len(terms) if terms else 0.0)


def lacking(hits: Sequence[Hit]) -> list[Hit]:
    """The hits whose route measured no similarity: :func:`similarities` reads them."""
    return [h for h in hits if h.why is None or h.why.similarity is None]


def similarities(
    store: Store, embedder: Embedder, namespace: str, qvec: np.ndarray, hits: Sequence[Hit]
) -> dict[int, float]:
    """Cosine of the query and each hit (by ``id(hit)``), from stored vectors only: a
    record's own text when it was embedded, else the best of its source turns (an
    episode: its turn). Nothing is embedded here; a hit with neither is left out."""
    if not hits:
        return {}
    own = {content_hash(h.text): h for h in hits if h.kind != "episode"}
    sources = list(dict.fromkeys(s for h in hits for s in h.sources))
    turns = {e.id: e for e in store.get_episodes(namespace, sources)} if sources else {}
    turn_hash = {
        i: content_hash(documents.embed_text(e.text, e.speaker, e.metadata))
        for i, e in turns.items()
    }
    wanted = list(dict.fromkeys([*own, *turn_hash.values()]))
    vectors = store.cached_embeddings(embedder.model_id, wanted) if wanted else {}
    q = np.asarray(qvec, dtype=np.float32)
    cos = {h: float(np.asarray(v, dtype=np.float32) @ q) for h, v in vectors.items()}
    out: dict[int, float] = {}
    for h in hits:
        mine = cos.get(content_hash(h.text)) if h.kind != "episode" else None
        if mine is None:
            found = [cos[turn_hash[s]] for s in h.sources if s in turn_hash if turn_hash[s] in cos]
            mine = max(found) if found else None
        if mine is not None:
            out[id(h)] = round(mine, 4)
    return out
