"""The heuristic tier's Aggregate(c_v, c_new | n): extractive, no LLM.

The sentences of the node's content and of the new content compete by centrality: the
cosine of a sentence's embedding to the mean of all of them. The budget shrinks with the
node's descendant count, ``max(1, round(K / log2(n + 1)))`` sentences, so nodes with
many leaves beneath (upper nodes) keep only the most central, most general sentences:
the extractive counterpart of the prompt's "more abstract as entries accumulate". When
the budget allows two sentences or more, one is reserved for the new content, as the
prompt asks that the summary combine both inputs. Kept sentences stay in their order
(existing content first).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from memstrata.retrieval.text import sentences

Embed = Callable[[Sequence[str]], NDArray[np.float32]]


def budget(n: int, k: int) -> int:
    """Sentences kept for a node with ``n`` leaves beneath (after the insertion)."""
    return max(1, round(k / math.log2(n + 1)))


def _sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in sentences(text)] or ([text.strip()] if text.strip() else [])


def extractive_aggregate(current: str, new: str, n: int, k: int, embed: Embed) -> str:
    """The merged content of a node with ``n`` leaves beneath it (counting the new one)."""
    old = list(dict.fromkeys(_sentences(current)))
    fresh = [s for s in dict.fromkeys(_sentences(new)) if s not in old]
    pool = old + fresh
    if not pool:
        return ""
    want = budget(n, k)
    if len(pool) <= want:
        return " ".join(pool)
    vecs = embed(pool)
    centre = vecs.mean(axis=0)
    centre = centre / (np.linalg.norm(centre) or 1.0)
    score = vecs @ centre
    order = sorted(range(len(pool)), key=lambda i: -float(score[i]))
    keep: list[int] = []
    if fresh and want >= 2:
        keep.append(next(i for i in order if i >= len(old)))
    for i in order:
        if len(keep) >= want:
            break
        if i not in keep:
            keep.append(i)
    return " ".join(pool[i] for i in sorted(keep))
