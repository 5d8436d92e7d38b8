"""Measures of how clean built structures are, which read names only and so apply to any
design: whether a name is *noise* (it opens with a greeting or interjection, "Hi Jonas",
"wow", or all its words are function words, "now_i"; spaCy's English stop words), and
the *cohesion* of groups of names (members of one group against names drawn at random).
``studies/structures.py`` reports them on a data set; the designs' tests hold their
heuristic builders to them (docs/knowledge.md, "Cleaner structures")."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: greetings, interjections and fillers: a name never opens with one
INTERJECTIONS = frozenset(
    """
    hi hey hello hiya heya howdy yo wow whoa woah woohoo yay yes yeah yep yup no nope nah
    ok okay oh ooh ah aw aww hmm um uh ugh oops haha hahaha lol omg please thanks thank
    thx sorry bye goodbye cheers congrats congratulations gosh geez
    """.split()
)
_WORD = re.compile(r"[^\W_]+")


def noise(label: str) -> bool:
    """Whether a name is made of greetings or function words (see the module)."""
    from spacy.lang.en.stop_words import STOP_WORDS

    words = [w.casefold() for w in _WORD.findall(label)]
    if not words:
        return False
    return words[0] in INTERJECTIONS or all(w in INTERJECTIONS or w in STOP_WORDS for w in words)


def cohesion(
    groups: Sequence[Sequence[str]], embed: Callable[[list[str]], Any], seed: int = 0
) -> tuple[float, float]:
    """(mean cosine of two members of one group, averaged over groups of two or more;
    mean cosine of two names drawn at random from all members), names embedded by
    ``embed`` (unit vectors)."""
    groups = [list(dict.fromkeys(g)) for g in groups]
    groups = [g for g in groups if len(g) >= 2]
    names = sorted({n for g in groups for n in g})
    if len(names) < 2:
        return float("nan"), float("nan")
    vec = dict(zip(names, np.asarray(embed(names), dtype=np.float64), strict=True))
    within = [
        float(np.mean([vec[a] @ vec[b] for a, b in itertools.combinations(g, 2)])) for g in groups
    ]
    rng = np.random.default_rng(seed)
    pairs = [rng.choice(len(names), 2, replace=False) for _ in range(2000)]
    rand = [float(vec[names[a]] @ vec[names[b]]) for a, b in pairs]
    return float(np.mean(within)), float(np.mean(rand))
