"""How many turns does a question's evidence need? The adaptive cut's ``keep``, swept::

    python -m studies.evidence_keep FILE --format qaset|locomo [--recipes default,mnemis]
        [--keeps 0.5,0.6,0.7,0.8] [--db STORE]

Each question is searched once per recipe (k = 10, heuristic tier, no token budget);
the source turns of those hits are scored once by the cut's own score
(:mod:`memstrata.retrieval.evidence`), then cut at every ``keep``. It prints, per recipe,
the evidence set's Avg K, precision and recall at a fixed k (3, 5, 7, 10) and at each
keep, over the questions that have evidence (abstention questions left out, as ``bench
qa`` does): the cut is worth having where it beats a fixed k of the same Avg K.
``--db``: a store that already holds the samples (namespaces named by sample id) and
the recipes' builds, such as the one ``bench qa`` caches; else a temporary store is
filled and built first. Figures: docs/benchmarks.md, "Adaptive evidence sets".
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

from memstrata import AsyncMemory
from memstrata.config import Config
from memstrata.eval.qa.formats import FORMATS, load
from memstrata.eval.qa.metrics_retrieval import evidence_set
from memstrata.retrieval import evidence


async def sweep(args: argparse.Namespace, db: str) -> dict[str, dict[str, list[float]]]:
    recipes = args.recipes.split(",")
    keeps = [float(x) for x in args.keeps.split(",")]
    totals: dict[str, dict[str, list[float]]] = {}
    manual: dict[str, Any] = {"build.mode": "manual"}
    config = Config.load(**manual)
    async with AsyncMemory.open(db, config=config) as memory:
        store, embedder = memory.store, memory.embedder
        for sample in load(args.file, args.format):
            ns = sample.id
            if not args.db:
                await memory.add_many([t.episode() for t in sample.turns], namespace=ns)
            questions = [qa for qa in sample.qa if qa.evidence and not qa.abstain]
            if not questions:
                continue
            texts = [qa.question for qa in questions]
            qvecs = embedder.embed(texts)
            for recipe in recipes:
                if not args.db:
                    await memory.build(ns, recipe=recipe, tier="heuristic")
                results = await memory.search_many(
                    texts, namespace=ns, k=10, recipe=recipe, max_tokens=None
                )
                rows = totals.setdefault(recipe, {})
                for qa, qvec, result in zip(questions, qvecs, results, strict=True):
                    hits = result.hits
                    ids = evidence.source_order(hits, 10)
                    scores = evidence.source_scores(store, embedder, ns, qa.question, qvec, ids)
                    sets = {f"k={k}": ids[:k] for k in (3, 5, 7, 10)}
                    for keep in keeps:
                        kept = evidence.cut(hits, scores, keep, 10)
                        sets[f"keep {keep}"] = evidence.source_order(kept, 10)
                    for name, chosen in sets.items():
                        e = evidence_set(chosen, qa.evidence)
                        acc = rows.setdefault(name, [0.0, 0.0, 0.0, 0.0])
                        acc[0] += e["size"]
                        acc[1] += e["precision"]
                        acc[2] += e["recall"]
                        acc[3] += 1
    return totals


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--format", choices=list(FORMATS), default="qaset")
    parser.add_argument("--recipes", default="default")
    parser.add_argument("--keeps", default="0.5,0.6,0.7,0.8")
    parser.add_argument("--db", default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "evidence.db")
        totals = asyncio.run(sweep(args, db))
    print("| recipe | cut | Avg K | P | R |")
    print("|---|---|---|---|---|")
    for recipe, rows in totals.items():
        for name, (k, p, r, n) in rows.items():
            print(f"| {recipe} | {name} | {k / n:.2f} | {p / n:.3f} | {r / n:.3f} |")


if __name__ == "__main__":
    main()
