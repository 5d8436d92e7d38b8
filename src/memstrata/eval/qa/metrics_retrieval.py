"""Retrieval metrics per question, over the distinct source episodes of the hits in hit
order (``ranked``), and their averages per group.

* Recall@K / Precision@K as in :mod:`memstrata.eval.metrics`: K counts distinct source
  episodes; precision divides by the sources actually in the window.
* The evidence set: the distinct sources of ``search(question, k=10, max_tokens=None)``;
  its size (Avg K once averaged), precision and recall.
* LongMemEval's recall_any@k (some gold item in the first k), recall_all@k (every gold
  item in the first k) and NDCG@k with binary relevance and LongMemEval's discount (the
  first two ranks weigh 1, rank r > 1 weighs 1/log2(r)). Computed on turns and, by
  mapping each turn to its session, on sessions.
* Knowledge-update data (questions naming ``stale`` turns, which state a value the
  evidence has superseded): ``current_first``, 1 when some evidence turn is in the
  ranking and the first one ranks above every stale turn there, else 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from statistics import mean
from typing import Any

from memstrata.eval.metrics import percentile, recall_precision

KS = (1, 3, 5, 10, 20, 50)
LME_KS = (5, 10, 30, 50)


def dcg(relevances: Sequence[float]) -> float:
    if not relevances:
        return 0.0
    return relevances[0] + sum(r / math.log2(i) for i, r in enumerate(relevances[1:], start=2))


def ndcg(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    wanted = set(gold)
    if not wanted:
        return 0.0
    rels = [1.0 if r in wanted else 0.0 for r in ranked[:k]]
    ideal = [1.0] * min(len(wanted), k)
    return dcg(rels) / dcg(ideal)


def recall_any(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    window = set(ranked[:k])
    return float(any(g in window for g in gold))


def recall_all(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    window = set(ranked[:k])
    wanted = list(gold)
    return float(bool(wanted) and all(g in window for g in wanted))


def current_first(ranked: Sequence[str], gold: Iterable[str], stale: Iterable[str]) -> float:
    """1.0 when the first evidence turn of ``ranked`` comes before every stale one (a
    stale turn left out of the ranking counts as below it); 0.0 when no evidence turn
    is ranked at all."""
    wanted, old = set(gold), set(stale)
    for r in ranked:
        if r in wanted:
            return 1.0
        if r in old:
            return 0.0
    return 0.0


def to_sessions(ranked: Sequence[str], session_of: dict[str, str]) -> list[str]:
    """Turns in hit order → their sessions in order of first appearance."""
    return list(dict.fromkeys(session_of[r] for r in ranked if r in session_of))


def evidence_set(evset: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    found = len(set(evset) & set(gold))
    return {
        "size": float(len(evset)),
        "precision": found / len(evset) if evset else 0.0,
        "recall": found / len(set(gold)) if gold else 0.0,
    }


def question_metrics(
    ranked: list[str],
    evset: list[str],
    gold: list[str],
    gold_sessions: list[str],
    session_of: dict[str, str],
    ks: Sequence[int] = KS,
    adaptive: list[str] | None = None,
    stale: Sequence[str] = (),
) -> dict[str, float]:
    """Every retrieval figure of one question (empty when it has no evidence);
    ``adaptive``: the sources of its adaptive evidence set, when it was searched so;
    ``stale``: turns stating a superseded value, which the evidence should outrank."""
    out: dict[str, float] = {}
    if gold and stale:
        out["current_first"] = current_first(ranked, gold, stale)
    if gold:
        for k in ks:
            r, p = recall_precision(ranked, gold, k)
            out[f"recall@{k}"], out[f"precision@{k}"] = r, p
        e = evidence_set(evset, gold)
        out["evidence_k"], out["evidence_p"], out["evidence_r"] = (
            e["size"],
            e["precision"],
            e["recall"],
        )
        if adaptive is not None:
            a = evidence_set(adaptive, gold)
            out["adaptive_k"], out["adaptive_p"], out["adaptive_r"] = (
                a["size"],
                a["precision"],
                a["recall"],
            )
        for k in LME_KS:
            out[f"turn_recall_any@{k}"] = recall_any(ranked, gold, k)
            out[f"turn_recall_all@{k}"] = recall_all(ranked, gold, k)
            out[f"turn_ndcg@{k}"] = ndcg(ranked, gold, k)
    if gold_sessions and session_of:
        sessions = to_sessions(ranked, session_of)
        for k in LME_KS:
            out[f"session_recall_any@{k}"] = recall_any(sessions, gold_sessions, k)
            out[f"session_recall_all@{k}"] = recall_all(sessions, gold_sessions, k)
            out[f"session_ndcg@{k}"] = ndcg(sessions, gold_sessions, k)
    return out


def average(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Mean of each figure over the rows that have it (``n_<figure>`` is not kept: the
    group's ``n`` counts questions with evidence)."""
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r))
    out: dict[str, float] = {}
    for key in keys:
        values = [r[key] for r in rows if key in r and r[key] is not None]
        if values:
            out[key] = round(mean(values), 4)
    return out


def latency(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values, 0.5), 2),
        "p95": round(percentile(values, 0.95), 2),
        "mean": round(mean(values), 2) if values else 0.0,
    }
