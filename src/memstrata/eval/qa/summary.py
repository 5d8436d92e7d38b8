"""From per-question rows to ``summary.json``: per recipe, overall and per category.

``overall`` leaves out questions whose right reply is to abstain (LoCoMo's adversarial
category, LongMemEval's ``_abs`` questions), as the papers do; their own figure is the
abstention accuracy (its recall), beside its precision (the share of all abstentions
that were due), and their category keeps its retrieval figures. Retrieval figures
average over questions with evidence; answer scores over questions with a gold answer.

``knowledge`` (knowledge-update data only): over the questions that name stale turns,
the share whose first evidence turn outranks every stale one (``current_first``), the
recall of the current evidence, and the share of answers holding the current value and
not the stale one (``current_answer``).
"""

from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

from memstrata.eval.qa import cost, metrics_retrieval


def _group(rows: list[dict[str, Any]]) -> dict[str, Any]:
    with_evidence = [r["retrieval"] for r in rows if r.get("evidence")]
    out: dict[str, Any] = {"questions": len(rows), "with_evidence": len(with_evidence)}
    retrieval = metrics_retrieval.average(with_evidence)
    for key, value in retrieval.items():
        name = {"evidence_k": "avg_k", "evidence_p": "evidence_precision"}.get(key, key)
        out[{"evidence_r": "evidence_recall"}.get(name, name)] = value
    answered = [r for r in rows if "scores" in r]
    if answered:
        for key in (
            "f1",
            "bleu1",
            "exact_match",
            "rouge_l_recall",
            "abstention",
            "false_abstention",
            "current_answer",
        ):
            values = [r["scores"][key] for r in answered if key in r["scores"]]
            if values:
                out[key] = round(mean(values), 4)
        out["context_tokens"] = round(mean(r["context_tokens"] for r in answered), 1)
        ratios = [r["compaction_ratio"] for r in answered if r.get("compaction_ratio") is not None]
        if ratios:
            out["compaction_ratio"] = round(mean(ratios), 5)
        out["answer_errors"] = sum(1 for r in rows if "answer_error" in r)
        out["answer_fallbacks"] = sum(1 for r in rows if "answer_fallback" in r)
    judged: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        for name, v in (r.get("judge") or {}).items():
            judged[name].append(v)
    for name, values in judged.items():
        out[f"judge.{name}"] = round(mean(values), 4)
        out[f"judge.{name}.n"] = len(values)
    out["latency_ms"] = metrics_retrieval.latency([r["latency_ms"] for r in rows])
    return out


def knowledge(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The knowledge-update figures of questions that name stale turns."""
    out: dict[str, Any] = {"questions": len(rows)}
    for key in ("current_first", "recall@5", "recall@10"):
        values = [r["retrieval"][key] for r in rows if key in r["retrieval"]]
        if values:
            out[key] = round(mean(values), 4)
    scored = [r.get("scores", {}) for r in rows]
    answers = [s["current_answer"] for s in scored if "current_answer" in s]
    if answers:
        out["current_answer"] = round(mean(answers), 4)
        out["answered"] = len(answers)
    return out


def summarise(
    rows: list[dict[str, Any]], costs: list[dict[str, Any]], recipes: list[str]
) -> dict[str, Any]:
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:  # a question done twice (resume after a cut line) counts once
        latest[(r["recipe"], r["sample"], r["qid"])] = r
    out: dict[str, Any] = {}
    for name in recipes:
        mine = [r for (rec, _, _), r in latest.items() if rec == name]
        if not mine:
            continue
        overall = [r for r in mine if not r.get("abstain")]
        entry = _group(overall or mine)
        abstain = [r for r in mine if r.get("abstain") and "scores" in r]
        if abstain:
            entry["abstention"] = round(mean(r["scores"]["abstention"] for r in abstain), 4)
            entry["abstention.n"] = len(abstain)
            # precision: of the replies that abstained, the share that should have
            right = sum(r["scores"]["abstention"] for r in abstain)
            wrong = sum(r["scores"].get("false_abstention", 0.0) for r in overall if "scores" in r)
            entry["abstention_recall"] = entry["abstention"]
            if right + wrong:
                entry["abstention_precision"] = round(right / (right + wrong), 4)
        by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in mine:
            by_cat[r["category"]].append(r)
        entry["by_category"] = {c: _group(rs) for c, rs in sorted(by_cat.items())}
        knowing = [r for r in mine if r.get("stale")]
        if knowing:
            entry["knowledge"] = knowledge(knowing)
        entry["served_from_cache"] = sum(1 for r in mine if r.get("cached"))
        entry["answers"] = {
            "generated": sum(1 for r in mine if "answer" in r and not r.get("extractive")),
            "extractive": sum(1 for r in mine if r.get("extractive")),
            "abstained": sum(1 for r in mine if r.get("abstained")),
        }
        mine_costs = [c for c in costs if c["recipe"] in (name, "*")]
        entry["cost"] = cost.by_stage(mine_costs)
        entry["cost_this_run"] = cost.by_stage([c for c in mine_costs if not c.get("replayed")])
        out[name] = entry
    return out


def needs_llm(*, llm: bool, judge: bool, answers: bool) -> list[str]:
    """The columns this run could not fill for want of an LLM (answering and judging)."""
    if not answers:
        return []
    missing = [] if judge else ["judge"]
    if not llm:
        missing.append("answer (generated, not extractive)")
    return missing
