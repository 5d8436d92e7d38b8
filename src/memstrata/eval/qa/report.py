"""The run's Markdown report: tables a reader can paste, from ``summary.json`` alone."""

from __future__ import annotations

from typing import Any

from memstrata.eval.qa.metrics_retrieval import KS

LME = (
    "turn_recall_any@5",
    "turn_recall_all@5",
    "turn_ndcg@5",
    "turn_recall_any@10",
    "turn_recall_all@10",
    "turn_ndcg@10",
    "session_recall_any@5",
    "session_recall_all@5",
    "session_ndcg@5",
    "session_recall_any@10",
    "session_recall_all@10",
    "session_ndcg@10",
)


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return lines + [""]


def tables(report: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
    """(title, header, rows) of every table, shared by the Markdown and HTML reports."""
    recipes: dict[str, Any] = report["recipes"]
    out = []
    head = ["recipe", "n"] + [f"R@{k}" for k in KS] + [f"P@{k}" for k in KS]
    rows = [
        [name, e.get("with_evidence")]
        + [e.get(f"recall@{k}") for k in KS]
        + [e.get(f"precision@{k}") for k in KS]
        for name, e in recipes.items()
    ]
    out.append(("Evidence retrieval (K counts distinct source turns)", head, rows))
    head = ["recipe", "Avg K", "P (evidence set)", "R (evidence set)"]
    head += ["adaptive Avg K", "adaptive P", "adaptive R", "search p50 ms", "p95 ms"]
    rows = [
        [
            name,
            e.get("avg_k"),
            e.get("evidence_precision"),
            e.get("evidence_recall"),
            e.get("adaptive_k"),
            e.get("adaptive_p"),
            e.get("adaptive_r"),
            e["latency_ms"]["p50"],
            e["latency_ms"]["p95"],
        ]
        for name, e in recipes.items()
    ]
    out.append(
        (
            "Evidence set (search k=10, no token budget; adaptive: cut to what the evidence "
            "needs, budgets.evidence_keep) and search latency",
            head,
            rows,
        )
    )
    present = [m for m in LME if any(m in e for e in recipes.values())]
    if present:
        rows = [[name] + [e.get(m) for m in present] for name, e in recipes.items()]
        out.append(("LongMemEval retrieval (turn and session level)", ["recipe", *present], rows))
    judges = sorted({k for e in recipes.values() for k in e if k.startswith("judge.")})
    judges = [j for j in judges if not j.endswith(".n")]
    head = ["recipe", "F1", "BLEU-1", "EM", "ROUGE-L R", *judges, "abstention", "abst. precision"]
    head += ["false abst.", "context tokens", "compaction"]
    rows = [
        [name, e.get("f1"), e.get("bleu1"), e.get("exact_match"), e.get("rouge_l_recall")]
        + [e.get(j) for j in judges]
        + [e.get("abstention"), e.get("abstention_precision"), e.get("false_abstention")]
        + [e.get("context_tokens"), e.get("compaction_ratio")]
        for name, e in recipes.items()
    ]
    out.append(("Answers (overall leaves out abstention questions)", head, rows))
    if any("knowledge" in e for e in recipes.values()):
        head = ["recipe", "n", "current first", "R@5", "R@10", "answer current", "answered"]
        rows = [
            [name, k.get("questions"), k.get("current_first"), k.get("recall@5")]
            + [k.get("recall@10"), k.get("current_answer"), k.get("answered")]
            for name, e in recipes.items()
            if (k := e.get("knowledge"))
        ]
        out.append(
            (
                "Knowledge update (questions naming stale turns: the first evidence turn "
                "above every stale one; the answer holds the current value, not the stale one)",
                head,
                rows,
            )
        )
    head = ["recipe", "category", "n", "R@10", "Avg K", "R (evidence set)", "F1", *judges]
    rows = []
    for name, e in recipes.items():
        for cat, c in e["by_category"].items():
            rows.append(
                [name, cat, c["questions"], c.get("recall@10"), c.get("avg_k")]
                + [c.get("evidence_recall"), c.get("f1") if "f1" in c else c.get("abstention")]
                + [c.get(j) for j in judges]
            )
    out.append(
        ("Per category (F1 column: abstention accuracy for abstain-only groups)", head, rows)
    )
    head = ["recipe", "stage", "LLM calls", "cached", "prompt tok", "completion tok", "seconds"]
    head.append(f"money ({report.get('currency', 'USD')})")
    rows = []
    for name, e in recipes.items():
        for stage, c in e["cost"].items():
            rows.append(
                [name, stage, int(c["calls"]), int(c["cached"]), int(c["prompt_tokens"])]
                + [int(c["completion_tokens"]), c["seconds"], c["money"]]
            )
    out.append(
        (
            "Cost per stage (ingestion includes the shared import; a row served from the "
            "cache counts what it cost when it was made, and summary.json's cost_this_run "
            "leaves it out)",
            head,
            rows,
        )
    )
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# bench qa: {report['data']} ({report['format']})",
        "",
        f"{report['samples']} samples, {report['questions']} questions, recipes: "
        f"{', '.join(report['recipes'])}. Wall time {report['wall_seconds']:.1f} s; "
        f"{report['served_from_cache']} rows served from the result cache.",
        "",
    ]
    if report["needs_llm"]:
        lines += [
            "Without an LLM these columns are empty: " + ", ".join(report["needs_llm"]) + ". "
            "Every retrieval figure, the latencies and the extractive answers' F1 are computed.",
            "",
        ]
    for title, head, rows in tables(report):
        lines += [f"## {title}", ""] + table(head, rows)
    return "\n".join(lines)
