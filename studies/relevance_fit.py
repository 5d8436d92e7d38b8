"""The relevance score's calibration: a logistic curve over a hit's cosine to the query
and the share of the query's terms it holds, fitted to whether the hit is evidence::

    python -m studies.relevance_fit FIT_FILE --format locomo [--check FILE --check-format F]
        [--recipe default] [--k 10]

Each question with evidence (abstention questions left out) is searched once (heuristic
tier, no token budget); every hit returned is a row: its ``why.similarity``, its share
of the query's search terms (:func:`memstrata.retrieval.relevance.search_terms`) and a
label, 1 when one of its sources is an evidence turn of the question. The weights are
fitted by Newton's method on FIT_FILE's rows; the table then compares, per band of the
fitted score, the mean score with the share of evidence hits, on FIT_FILE and on
``--check`` (a set the fit never saw). Figures: docs/benchmarks.md, "A score that means
the same for every query".
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from memstrata import AsyncMemory
from memstrata.config import Config
from memstrata.eval.qa.formats import FORMATS, load
from memstrata.retrieval.relevance import search_terms


async def rows(path: str, fmt: str, recipe: str, k: int) -> np.ndarray:
    """(cosine, share, label) per hit returned."""
    out: list[tuple[float, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        manual: dict[str, Any] = {"build.mode": "manual"}
        config = Config.load(**manual)
        async with AsyncMemory.open(Path(tmp) / "fit.db", config=config) as memory:
            for sample in load(path, fmt):
                ns = sample.id
                await memory.add_many([t.episode() for t in sample.turns], namespace=ns)
                await memory.build(ns, recipe=recipe, tier="heuristic")
                questions = [qa for qa in sample.qa if qa.evidence and not qa.abstain]
                if not questions:
                    continue
                found = await memory.search_many(
                    [qa.question for qa in questions],
                    namespace=ns,
                    k=k,
                    recipe=recipe,
                    max_tokens=None,
                )
                for qa, result in zip(questions, found, strict=True):
                    terms = search_terms(qa.question)
                    gold = set(qa.evidence)
                    for h in result.hits:
                        assert h.why is not None
                        share = len(h.why.terms) / len(terms) if terms else 0.0
                        label = float(bool(gold & set(h.sources)))
                        out.append((h.why.similarity or 0.0, share, label))
    return np.asarray(out, dtype=np.float64)


def fit(data: np.ndarray, l2: float = 1e-3, steps: int = 50) -> np.ndarray:
    """Weights (cosine, share, bias) of the logistic regression, by Newton's method."""
    x = np.column_stack([data[:, 0], data[:, 1], np.ones(len(data))])
    y = data[:, 2]
    w = np.zeros(3)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (p - y) + l2 * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + l2 * np.eye(3)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w


def table(name: str, data: np.ndarray, w: np.ndarray) -> None:
    x = np.column_stack([data[:, 0], data[:, 1], np.ones(len(data))])
    score = 1.0 / (1.0 + np.exp(-(x @ w)))
    y = data[:, 2]
    print(f"\n{name}: {len(data)} hits, {y.mean():.3f} evidence")
    print("| score band | hits | mean score | evidence share |")
    print("|---|---:|---:|---:|")
    for lo in np.arange(0.0, 1.0, 0.1):
        band = (score >= lo) & (score < lo + 0.1 if lo < 0.9 else score <= 1.0)
        if band.any():
            print(
                f"| {lo:.1f}-{lo + 0.1:.1f} | {band.sum()} | {score[band].mean():.3f} | "
                f"{y[band].mean():.3f} |"
            )
    brier = float(np.mean((score - y) ** 2))
    print(f"Brier score {brier:.4f} (always the base rate: {float(np.var(y)):.4f})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--format", choices=list(FORMATS), default="qaset")
    parser.add_argument("--check", default=None)
    parser.add_argument("--check-format", choices=list(FORMATS), default="qaset")
    parser.add_argument("--recipe", default="default")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args(argv)
    data = asyncio.run(rows(args.file, args.format, args.recipe, args.k))
    w = fit(data)
    print(f"SIMILARITY_WEIGHT = {w[0]:.2f}, SHARE_WEIGHT = {w[1]:.2f}, BIAS = {w[2]:.2f}")
    table(args.file, data, w)
    if args.check:
        table(args.check, asyncio.run(rows(args.check, args.check_format, args.recipe, args.k)), w)


if __name__ == "__main__":
    main()
