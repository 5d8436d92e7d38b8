"""Evidence retrieval metrics over ranked source ids.

K counts *distinct source episodes in hit order*: a hit resting on three episodes uses
three of the K slots, so routes that return wide hits cannot look better for free.
Precision@K divides by the number of distinct sources actually in the window (at most K),
so a route that returns fewer items is not charged for slots it did not fill.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from statistics import mean


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 <= q <= 1) of ``values``; 0.0 when empty."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def distinct_sources(hit_sources: Iterable[Sequence[str]]) -> list[str]:
    seen: dict[str, None] = {}
    for sources in hit_sources:
        for s in sources:
            seen.setdefault(s, None)
    return list(seen)


def recall_precision(ranked: list[str], evidence: list[str], k: int) -> tuple[float, float]:
    window = ranked[:k]
    found = len(set(window) & set(evidence))
    recall = found / len(evidence) if evidence else 0.0
    precision = found / len(window) if window else 0.0
    return recall, precision


def summarise(
    rows: list[tuple[int, list[str], list[str]]], ks: Sequence[int], overall_categories: set[int]
) -> dict[str, dict[str, float]]:
    """``rows`` are (category, ranked sources, evidence); questions without evidence skipped.

    Returns ``{group: {"n", "R@k", "P@k", ...}}`` for each category and ``overall``.
    """
    groups: dict[str, list[tuple[list[str], list[str]]]] = defaultdict(list)
    for category, ranked, evidence in rows:
        if not evidence:
            continue
        groups[str(category)].append((ranked, evidence))
        if category in overall_categories:
            groups["overall"].append((ranked, evidence))
    out: dict[str, dict[str, float]] = {}
    for group, items in sorted(groups.items()):
        entry: dict[str, float] = {"n": len(items)}
        for k in ks:
            pairs = [recall_precision(r, e, k) for r, e in items]
            entry[f"R@{k}"] = round(mean(p[0] for p in pairs), 4)
            entry[f"P@{k}"] = round(mean(p[1] for p in pairs), 4)
        out[group] = entry
    return out


def evidence_set_metrics(
    rows: Iterable[tuple[Sequence[str], Sequence[str]]],
) -> dict[str, float]:
    """Avg K, Precision@K and Recall@K of final evidence sets (HiGMem's definition).

    ``rows`` are (evidence set, gold evidence) per question: the evidence set is the
    distinct source episodes, in hit order, of what a recipe returns for a ``k = 10``
    request, so K is the set's own size (10 for a fixed-size recipe that fills it).
    Precision and recall are computed per question and macro-averaged; questions
    without gold evidence are skipped; an empty set has precision 0.
    """
    ks: list[int] = []
    precision: list[float] = []
    recall: list[float] = []
    for found, gold in rows:
        if not gold:
            continue
        chosen = list(dict.fromkeys(found))
        hit = len(set(chosen) & set(gold))
        ks.append(len(chosen))
        precision.append(hit / len(chosen) if chosen else 0.0)
        recall.append(hit / len(set(gold)))
    if not ks:
        return {"n": 0, "avg_k": 0.0, "precision": 0.0, "recall": 0.0}
    return {
        "n": len(ks),
        "avg_k": round(mean(ks), 3),
        "precision": round(mean(precision), 4),
        "recall": round(mean(recall), 4),
    }
