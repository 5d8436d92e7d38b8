"""``memstrata bench locomo``: evidence recall and precision per category, beside baselines.

Systems compared in one run, on one imported copy of the data:

* ``bm25`` — flat BM25 over turns (FTS5, stopwords removed), nothing else;
* ``rag`` — the flat hybrid baseline recipe: dense + BM25 fused by RRF;
* the recipe under test (``default`` unless told otherwise).

Beside Recall@k at fixed k, every system gets the evidence-set metrics (Avg K,
Precision@K, Recall@K; :func:`~memstrata.eval.metrics.evidence_set_metrics`) of its answer
to a ``k = 10`` request: a recipe that sizes its evidence per question shows its own K,
a fixed-size one K = 10.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memstrata.eval.metrics import distinct_sources, evidence_set_metrics, summarise
from memstrata.eval.report import write_report
from memstrata.importers import locomo
from memstrata.memory import AsyncMemory
from memstrata.retrieval.text import content_terms

KS = (5, 10, 20, 50)
OVERALL = {1, 2, 3, 4}
EVIDENCE_K = 10


def evidence_groups(
    rows: list[tuple[int, list[str], list[str]]], overall: set[int]
) -> dict[str, dict[str, float]]:
    """Evidence-set metrics per category and over ``overall`` categories."""
    groups: dict[str, list[tuple[list[str], list[str]]]] = {}
    for category, found, gold in rows:
        groups.setdefault(str(category), []).append((found, gold))
        if category in overall:
            groups.setdefault("overall", []).append((found, gold))
    return {g: evidence_set_metrics(items) for g, items in sorted(groups.items())}


async def import_conversations(
    memory: AsyncMemory,
    conversations: list[locomo.Conversation],
    progress: Callable[[int], None] | None = None,
) -> int:
    added = 0
    for conv in conversations:
        report = await memory.add_many(conv.turns, namespace=conv.namespace, progress=progress)
        added += len(report.added)
    return added


async def ranked_sources(
    memory: AsyncMemory, system: str, conv: locomo.Conversation, depth: int
) -> list[list[str]]:
    questions = [q.question for q in conv.questions]
    if not questions:
        return []
    if system == "bm25":
        out = []
        for q in questions:
            hits = memory.store.bm25_episodes(conv.namespace, content_terms(q), depth)
            eps = memory.store.episodes_by_key([key for key, _ in hits])
            out.append([eps[key].id for key, _ in hits if key in eps])
        return out
    k = memory.engine.recipe(system).fusion.total(depth)  # each kind ``depth`` deep
    results = await memory.search_many(
        questions, namespace=conv.namespace, k=k, recipe=system, max_tokens=None
    )
    return [distinct_sources(h.sources for h in r.hits) for r in results]


async def run(
    memory: AsyncMemory,
    data_path: str | Path,
    systems: list[str],
    ks: tuple[int, ...] = KS,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    conversations = locomo.load(data_path)
    t0 = time.perf_counter()
    await import_conversations(memory, conversations, progress)
    import_s = time.perf_counter() - t0
    report: dict[str, Any] = {
        "data": str(data_path),
        "conversations": [c.namespace for c in conversations],
        "turns": sum(len(c.turns) for c in conversations),
        "questions": sum(len(c.questions) for c in conversations),
        "import_seconds": round(import_s, 2),
        "ks": list(ks),
        "systems": {},
    }
    for system in systems:
        if system != "bm25" and memory.engine.builders(system):
            t1 = time.perf_counter()
            builds = [
                b for c in conversations for b in await memory.build(c.namespace, recipe=system)
            ]
            report.setdefault("builds", {})[system] = {
                "seconds": round(time.perf_counter() - t1, 2),
                "per_namespace": [
                    {
                        "namespace": b.namespace,
                        "builder": b.builder,
                        "tier": b.tier,
                        "seconds": b.seconds,
                        **b.counts,
                        **b.details,
                    }
                    for b in builds
                ],
            }
        rows: list[tuple[int, list[str], list[str]]] = []
        sets: list[tuple[int, list[str], list[str]]] = []
        t1 = time.perf_counter()
        for conv in conversations:
            ranked = await ranked_sources(memory, system, conv, max(ks))
            rows.extend(
                (q.category, r, q.evidence) for q, r in zip(conv.questions, ranked, strict=True)
            )
        elapsed = time.perf_counter() - t1
        for conv in conversations:
            found = await ranked_sources(memory, system, conv, EVIDENCE_K)
            sets.extend(
                (q.category, f[:EVIDENCE_K] if system == "bm25" else f, q.evidence)
                for q, f in zip(conv.questions, found, strict=True)
            )
        report["systems"][system] = {
            "metrics": summarise(rows, ks, OVERALL),
            "evidence_set": evidence_groups(sets, OVERALL),
            "ms_per_query": round(1000 * elapsed / max(1, len(rows)), 2),
        }
    return report


def markdown(report: dict[str, Any]) -> str:
    ks = report["ks"]
    lines = [
        f"LoCoMo evidence retrieval — {report['data']} ({report['turns']} turns, "
        f"{report['questions']} questions); K counts distinct source turns.",
        "",
    ]
    header = (
        "| system | group | n | "
        + " | ".join(f"R@{k}" for k in ks)
        + " | "
        + " | ".join(f"P@{k}" for k in ks)
        + " |"
    )
    lines += [header, "|" + "---|" * (3 + 2 * len(ks))]
    for system, entry in report["systems"].items():
        for group, m in entry["metrics"].items():
            name = (
                "overall (1-4)"
                if group == "overall"
                else (f"{group} {locomo.CATEGORY_NAMES.get(int(group), '')}")
            )
            lines.append(
                f"| {system} | {name} | {int(m['n'])} | "
                + " | ".join(f"{m[f'R@{k}']:.3f}" for k in ks)
                + " | "
                + " | ".join(f"{m[f'P@{k}']:.3f}" for k in ks)
                + " |"
            )
    lines += [
        "",
        f"Evidence set: the distinct source turns of a k = {EVIDENCE_K} request; Avg K, "
        "Precision@K and Recall@K per question, macro-averaged.",
        "",
        "| system | group | n | Avg K | P@K | R@K |",
        "|---|---|---|---|---|---|",
    ]
    for system, entry in report["systems"].items():
        for group, m in entry.get("evidence_set", {}).items():
            if not m["n"]:
                continue
            name = (
                "overall (1-4)"
                if group == "overall"
                else (f"{group} {locomo.CATEGORY_NAMES.get(int(group), '')}")
            )
            lines.append(
                f"| {system} | {name} | {int(m['n'])} | {m['avg_k']:.2f} | "
                f"{m['precision']:.3f} | {m['recall']:.3f} |"
            )
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, "locomo", markdown)
