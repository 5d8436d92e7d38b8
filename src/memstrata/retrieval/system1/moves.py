"""What moved a candidate in System-1's refinement (:mod:`.refine`): the record the
refinement keeps as it goes, read for the hits it returns only.

System-1 scores a candidate in steps: its fused candidate lists (the base), the gains
added before the factor (``neighbour_weight``, ``reply_weight``), a factor (the boosts
add to it, the penalties multiply it), then the gains added after (``link_boost``,
``cover_boost``, ``thread_weight``, ``ask_weight``). A rule's effect
(:class:`~memstrata.models.Moved`) is the part of the candidate's final score it added
(positive) or took away (negative), as a share of that final score; rules are named by
their knobs (:class:`~memstrata.retrieval.system1.System1Params`).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np

from memstrata.embed.base import Embedder, content_hash
from memstrata.models import Episode, Hit, Moved, Why
from memstrata.retrieval import documents
from memstrata.store.base import ScoredKeys, Store

#: gains added before the factor, and after it, in the order they apply
BEFORE = ("neighbour_weight", "reply_weight")
AFTER = ("link_boost", "cover_boost", "thread_weight", "ask_weight")


@dataclass
class Ledger:
    """One query's refinement: each gain by rule and candidate, and each factor rule with
    its value and the candidates it applies to."""

    gains: dict[str, dict[int, float]] = field(default_factory=dict)
    #: the candidates the factor applies to (the fused lists' own)
    factored: Container[int] = field(default_factory=frozenset)
    boosts: list[tuple[str, float, Callable[[int], bool]]] = field(default_factory=list)
    penalties: list[tuple[str, float, Callable[[int], bool]]] = field(default_factory=list)

    def gain(self, rule: str, key: int, amount: float) -> None:
        if amount:
            got = self.gains.setdefault(rule, {})
            got[key] = got.get(key, 0.0) + amount

    def moved(self, key: int, base: float) -> list[Moved]:
        """The rules that moved ``key`` (``base``: its fused lists' score), in the order
        they applied."""
        got = self.gains
        before = {r: got[r].get(key, 0.0) for r in BEFORE if r in got}
        after = {r: got[r].get(key, 0.0) for r in AFTER if r in got}
        if key in self.factored:
            boosts = [(name, v) for name, v, applies in self.boosts if v and applies(key)]
            cuts = [(name, v) for name, v, applies in self.penalties if v and applies(key)]
        else:  # a candidate found by a rule after the factor (a reply, a thread) has none
            boosts, cuts = [], []
        raised = 1.0 + sum(v for _, v in boosts)
        kept = 1.0
        for _, v in cuts:
            kept *= 1.0 - v
        start = base + sum(before.values())
        final = start * raised * kept + sum(after.values())
        if final <= 0:
            return []
        out = [(r, g * raised * kept / final) for r, g in before.items() if g]
        out += [(name, start * v * kept / final) for name, v in boosts]
        taken = start * raised * (1.0 - kept)
        total = sum(v for _, v in cuts)
        out += [(name, -taken * v / total / final) for name, v in cuts]
        out += [(r, g / final) for r, g in after.items() if g]
        rounded = ((r, round(e, 4)) for r, e in out)
        return [Moved(rule=r, effect=e) for r, e in rounded if e]


def list_ranks(
    lists: Sequence[tuple[str, Sequence[tuple[int, int]]]], keys: Iterable[int]
) -> dict[int, dict[str, int]]:
    """Each of ``keys``'s rank in each named candidate list (``(key, rank)`` pairs, best
    first) that holds it; a name given twice is numbered (``voice``, ``voice#2``)."""
    wanted: dict[int, dict[str, int]] = {key: {} for key in keys}
    seen: dict[str, int] = {}
    for name, ranked in lists:
        seen[name] = seen.get(name, 0) + 1
        label = name if seen[name] == 1 else f"{name}#{seen[name]}"
        at = dict(reversed(ranked))  # key -> its first (best) rank
        for key, found in wanted.items():
            if key in at:
                found[label] = at[key]
    return wanted


def ranked(hits: Sequence[tuple[int, float]]) -> list[tuple[int, int]]:
    """A scored list's keys with their ranks from 1."""
    return list(zip(map(itemgetter(0), hits), range(1, len(hits) + 1), strict=True))


def explain(
    store: Store,
    embedder: Embedder,
    hits: Sequence[Hit],
    turns: dict[int, Episode],
    base: dict[int, float],
    ledger: Ledger,
    lists: Sequence[tuple[str, Sequence[tuple[int, int]]]],
    dense: ScoredKeys,
    qvec: np.ndarray,
) -> None:
    """Give each of ``hits`` (of ``turns``, their episodes in the same order) its
    :class:`~memstrata.models.Why`: its rank in each candidate list, the rules that moved
    it, and its cosine to the query (the dense list's; for a turn not in it, from its
    stored vector: nothing is embedded)."""
    keys = list(turns)
    ranks = list_ranks(lists, keys)
    sims = dict(dense)
    hashes = {
        key: content_hash(documents.embed_text(e.text, e.speaker, e.metadata))
        for key, e in turns.items()
        if key not in sims
    }
    if hashes:
        vecs = store.cached_embeddings(embedder.model_id, list(hashes.values()))
        q = np.asarray(qvec, dtype=np.float32)
        sims.update({key: float(vecs[h] @ q) for key, h in hashes.items() if h in vecs})
    for h, key in zip(hits, keys, strict=True):
        h.why = Why(
            similarity=round(sims[key], 4) if key in sims else None,
            lists=ranks[key],
            moved=ledger.moved(key, base.get(key, 0.0)),
        )
