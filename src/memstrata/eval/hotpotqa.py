"""``memstrata bench hotpotqa``: supporting-passage recall on a HotpotQA sample (document memory).

The corpus (``{title: [sentence, ...]}``) is imported into one namespace, one passage per
episode (id = title, text = the sentences joined). A question's supporting passages are
the distinct titles of its ``supporting_facts``. Per recipe and question, the hits of
``search(question, k=max K)`` are reduced to distinct source passages in hit order, and:

* ``R@K`` is the share of the supporting passages among the first K of them;
* ``both@K`` is the share of questions whose supporting passages are *all* among them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

from memstrata.errors import InvalidInputError
from memstrata.eval.metrics import distinct_sources, percentile
from memstrata.eval.report import write_report
from memstrata.memory import AsyncMemory

KS = (2, 5, 10)
BOTH_KS = (2, 5, 10)
NAMESPACE = "hotpotqa"
QUESTIONS_FILE = "hotpotqa_train.json"
CORPUS_FILE = "hotpotqa_train_corpus.json"


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answer: str
    kind: str
    supporting: tuple[str, ...]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"cannot read HotpotQA file {path}: {exc}") from exc


def resolve_paths(path: str | Path, corpus: str | Path | None = None) -> tuple[Path, Path]:
    """A directory holding both files, or the questions file plus ``corpus``."""
    p = Path(path)
    if p.is_dir():
        return p / QUESTIONS_FILE, Path(corpus) if corpus else p / CORPUS_FILE
    if corpus is None:
        guess = p.with_name(p.stem + "_corpus.json")
        if not guess.exists():
            raise InvalidInputError(f"no corpus beside {p}: pass --corpus")
        return p, guess
    return p, Path(corpus)


def load(
    questions_path: str | Path, corpus_path: str | Path
) -> tuple[list[dict[str, Any]], list[Question]]:
    """The passages as episode dicts and the questions, validated."""
    corpus = _read_json(Path(corpus_path))
    if not isinstance(corpus, dict):
        raise InvalidInputError(f"{corpus_path}: expected an object {{title: [sentences]}}")
    passages: list[dict[str, Any]] = []
    for title, sentences in corpus.items():
        if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
            raise InvalidInputError(f"{corpus_path}: passage {title!r} is not a list of strings")
        text = "".join(sentences).strip()
        if text:
            passages.append({"id": str(title), "text": text, "metadata": {"title": title}})
    known = {p["id"] for p in passages}
    raw = _read_json(Path(questions_path))
    if not isinstance(raw, list):
        raise InvalidInputError(f"{questions_path}: expected a list of questions")
    questions: list[Question] = []
    for i, item in enumerate(raw):
        try:
            support = tuple(dict.fromkeys(str(t) for t, _ in item["supporting_facts"]))
            q = Question(
                id=str(item.get("_id", i)),
                question=str(item["question"]),
                answer=str(item.get("answer", "")),
                kind=str(item.get("type", "")),
                supporting=support,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"{questions_path}: question {i} is malformed ({exc})") from exc
        missing = [t for t in q.supporting if t not in known]
        if missing:
            raise InvalidInputError(
                f"{questions_path}: question {q.id} cites passages not in the corpus: {missing}"
            )
        questions.append(q)
    return passages, questions


def score(ranked: list[list[str]], questions: list[Question]) -> dict[str, float]:
    """Recall@K and both-found@K over ``ranked`` distinct passages per question."""
    out: dict[str, float] = {"n": len(questions)}
    for k in KS:
        out[f"R@{k}"] = round(
            mean(
                len(set(r[:k]) & set(q.supporting)) / len(q.supporting)
                for r, q in zip(ranked, questions, strict=True)
            ),
            4,
        )
    for k in BOTH_KS:
        out[f"both@{k}"] = round(
            mean(set(q.supporting) <= set(r[:k]) for r, q in zip(ranked, questions, strict=True)),
            4,
        )
    return out


async def run(
    memory: AsyncMemory,
    questions_path: str | Path,
    corpus_path: str | Path,
    recipes: list[str],
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    passages, questions = load(questions_path, corpus_path)
    t0 = time.perf_counter()
    await memory.add_many(passages, namespace=NAMESPACE, progress=progress)
    report: dict[str, Any] = {
        "data": str(questions_path),
        "passages": len(passages),
        "questions": len(questions),
        "import_seconds": round(time.perf_counter() - t0, 2),
        "ks": list(KS),
        "systems": {},
    }
    depth = max(KS + BOTH_KS)
    for recipe in recipes:
        build_s = 0.0
        structures: dict[str, Any] = {}
        if memory.engine.builders(recipe):
            t1 = time.perf_counter()
            builds = await memory.build(NAMESPACE, recipe=recipe)
            build_s = time.perf_counter() - t1
            structures = {b.builder: {**b.counts, **b.details} for b in builds}
        ranked: list[list[str]] = []
        latencies: list[float] = []
        k = memory.engine.recipe(recipe).fusion.total(depth)  # each kind ``depth`` deep
        for q in questions:
            t1 = time.perf_counter()
            result = await memory.search(
                q.question, namespace=NAMESPACE, k=k, recipe=recipe, max_tokens=None
            )
            latencies.append(1000 * (time.perf_counter() - t1))
            ranked.append(distinct_sources(h.sources for h in result.hits))
        by_kind = {
            kind: score(
                [r for r, q in zip(ranked, questions, strict=True) if q.kind == kind],
                [q for q in questions if q.kind == kind],
            )
            for kind in sorted({q.kind for q in questions})
        }
        report["systems"][recipe] = {
            "metrics": {"overall": score(ranked, questions), **by_kind},
            "build_seconds": round(build_s, 2),
            "structures": structures,
            "search_ms": {
                "p50": round(percentile(latencies, 0.5), 2),
                "p95": round(percentile(latencies, 0.95), 2),
            },
        }
    return report


def markdown(report: dict[str, Any]) -> str:
    cols = [f"R@{k}" for k in KS] + [f"both@{k}" for k in BOTH_KS]
    lines = [
        f"HotpotQA supporting-passage retrieval — {report['data']} ({report['passages']} "
        f"passages, {report['questions']} questions); K counts distinct source passages.",
        "",
        "| recipe | group | n | " + " | ".join(cols) + " | search p50 ms | build s |",
        "|" + "---|" * (len(cols) + 5),
    ]
    for recipe, entry in report["systems"].items():
        for group, m in entry["metrics"].items():
            lines.append(
                f"| {recipe} | {group} | {int(m['n'])} | "
                + " | ".join(f"{m[c]:.3f}" for c in cols)
                + f" | {entry['search_ms']['p50']} | {entry['build_seconds']} |"
            )
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, "hotpotqa", markdown)
