"""``memstrata bench reader``: a design's reader on QA samples read as documents.

Each sample (a LoCoMo conversation, a QA-set sample such as a passage corpus, a
LongMemEval haystack) becomes one document, a line per turn (``[date] speaker: text``,
as an answer model reads a turn), and each of its answerable questions with evidence
(LoCoMo: categories 1-4) is read against it with the chosen tier. Per question:

* **compaction ratio**: the reader's first answer input over the document (its
  ``Reading.compaction_ratio``);
* **evidence recall of the windows**: the share of the question's gold turns whose
  text lies inside one of the returned windows;
* **``default`` at the same budget**: the sample's turns as episodes, searched with the
  ``default`` recipe, hits kept in order while they fit the windows' token count
  (:func:`fit_to_budget`); recall is the share of gold turns among them.

Build throughput: the document's words over the seconds of its first reading with
``graph_only`` (store the document, parse, build and store the graph), in words per
minute. The reader is whichever ``--design`` names (else the configured or only one).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from statistics import mean, median
from typing import Any

from memstrata.eval.qa import formats
from memstrata.eval.report import write_report
from memstrata.memory import AsyncMemory
from memstrata.retrieval.context import count_tokens, fit_to_budget
from memstrata.retrieval.documents import render


def document(sample: formats.Sample) -> tuple[str, dict[str, tuple[int, int]]]:
    """The sample as text and, per turn id, the span of the turn's text in it."""
    lines: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    at = 0
    for turn in sample.turns:
        when = turn.at.strftime("%Y-%m-%d %H:%M") if turn.at else None
        line = render(turn.text, turn.speaker, when, turn.metadata)
        start = at + line.index(turn.text) if turn.text else at
        spans[turn.id] = (start, start + len(turn.text))
        lines.append(line)
        at += len(line) + 1
    return "\n".join(lines), spans


def inside(span: tuple[int, int], windows: list[tuple[int, int]]) -> bool:
    return any(lo <= span[0] and span[1] <= hi for lo, hi in windows)


async def run(
    memory: AsyncMemory,
    data_path: str | Path,
    *,
    fmt: str = "locomo",
    design: str | None = None,
    tier: str = "heuristic",
    baseline: str = "default",
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    samples = formats.load(data_path, fmt)
    rows: list[dict[str, Any]] = []
    docs: list[dict[str, Any]] = []
    for sample in samples:
        text, spans = document(sample)
        questions = [q for q in sample.qa if q.evidence and not q.abstain]
        questions = questions[:limit] if limit else questions
        if not questions:
            continue
        await memory.add_many([t.episode() for t in sample.turns], namespace=sample.id)
        words = len(text.split())
        t0 = time.perf_counter()
        first = await memory.read(
            text, questions[0].question, design=design, tier=tier, graph_only=True
        )
        build_s = time.perf_counter() - t0
        docs.append(
            {
                "document": sample.id,
                "words": words,
                "tokens": count_tokens(text),
                "build_seconds": round(build_s, 3),
                "words_per_minute": round(60 * words / build_s),
                "nodes": first.graph.get("nodes"),
            }
        )
        base = await memory.search_many(
            [q.question for q in questions],
            namespace=sample.id,
            k=memory.engine.recipe(baseline).fusion.total(50),
            recipe=baseline,
            max_tokens=None,
        )
        for q, found in zip(questions, base, strict=True):
            reading = await memory.read(text, q.question, design=design, tier=tier)
            windows = [(w.start, w.end) for w in reading.windows]
            budget = sum(count_tokens(w.text) for w in reading.windows)
            kept, _, used = fit_to_budget(found.hits, budget) if budget else ([], "", 0)
            got = {s for h in kept for s in h.sources}
            gold = [e for e in q.evidence if e in spans]
            rows.append(
                {
                    "id": q.id,
                    "category": q.category,
                    "compaction_ratio": reading.compaction_ratio,
                    "windows": len(windows),
                    "window_tokens": budget,
                    "recall": sum(inside(spans[e], windows) for e in gold) / len(gold),
                    "baseline_tokens": used,
                    "baseline_recall": sum(e in got for e in gold) / len(gold),
                    "nodes": reading.graph.get("nodes"),
                }
            )
            if progress:
                progress(1)
    return {
        "data": str(data_path),
        "format": fmt,
        "tier": tier,
        "baseline": baseline,
        "documents": docs,
        "questions": rows,
        "summary": summarise(rows, docs),
    }


def summarise(rows: list[dict[str, Any]], docs: list[dict[str, Any]]) -> dict[str, Any]:
    def stats(group: list[dict[str, Any]]) -> dict[str, Any]:
        ratios = [r["compaction_ratio"] for r in group if r["compaction_ratio"] is not None]
        return {
            "n": len(group),
            "compaction_mean": round(mean(ratios), 4) if ratios else None,
            "compaction_median": round(median(ratios), 4) if ratios else None,
            "recall": round(mean(r["recall"] for r in group), 4),
            "baseline_recall": round(mean(r["baseline_recall"] for r in group), 4),
            "window_tokens": round(mean(r["window_tokens"] for r in group), 1),
            "nodes_median": median(r["nodes"] or 0 for r in group),
        }

    out: dict[str, Any] = {"overall": stats(rows)} if rows else {}
    cats = list(dict.fromkeys(r["category"] for r in rows))
    if len(cats) > 1:
        for cat in sorted(cats):
            out[cat] = stats([r for r in rows if r["category"] == cat])
    words = sum(d["words"] for d in docs)
    seconds = sum(d["build_seconds"] for d in docs)
    out["build_words_per_minute"] = round(60 * words / seconds) if seconds else None
    return out


def markdown(report: dict[str, Any]) -> str:
    s = report["summary"]
    lines = [
        f"Reader on {report['data']}, each sample one document, {report['tier']} tier; "
        f"beside `{report['baseline']}` at the same token budget.",
        "",
        "| group | n | compaction mean | median | window recall | "
        f"`{report['baseline']}` recall | window tokens | median nodes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for group, m in s.items():
        if not isinstance(m, dict):
            continue
        lines.append(
            f"| {group} | {m['n']} | {m['compaction_mean']:.1%} | {m['compaction_median']:.1%} | "
            f"{m['recall']:.3f} | {m['baseline_recall']:.3f} | {m['window_tokens']:.0f} | "
            f"{m['nodes_median']} |"
        )
    lines += [
        "",
        "| document | words | tokens | build s | words/min | nodes |",
        "|---|---|---|---|---|---|",
    ]
    for d in report["documents"]:
        lines.append(
            f"| {d['document']} | {d['words']} | {d['tokens']} | {d['build_seconds']} | "
            f"{d['words_per_minute']:,} | {d['nodes']} |"
        )
    lines.append(f"\nBuild throughput overall: {s.get('build_words_per_minute') or 0:,} words/min.")
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, "reader", markdown)
