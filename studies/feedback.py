"""Would the question moved toward its first hits find more? Over a ``bench qa`` run::

    memstrata bench qa FILE --format F --recipes default --no-answers --no-cache --out DIR
    python -m studies.feedback FILE --format F DIR/questions.jsonl

Pseudo-relevance feedback (Rocchio): the question's vector plus ``b`` times the mean
vector of the first ``m`` turns of the run's ranking, normalised, ranks every turn by
cosine; that list is fused after the run's own ranking (reciprocal rank, k = 20) with
weight ``w``. ``b = 0`` is the control: the question's own dense list fused the same
way, so what the feedback adds is the difference between a row and its ``b = 0`` row.
Prints Recall@10 over the questions with evidence that are not adversarial. Figures:
docs/benchmarks.md, "Two more ideas for the LoCoMo goal".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.eval.metrics import recall_precision
from memstrata.retrieval.documents import embed_text
from memstrata.retrieval.rank_fusion import rrf
from studies.runs import ranked_questions

SETTINGS = [(3, 0.0, 0.1), (3, 0.0, 0.25), (3, 1.0, 0.1), (3, 1.0, 0.25), (5, 0.5, 0.25)]


def fused(first: Sequence[str], second: Sequence[str], weight: float) -> list[str]:
    scores = rrf([first, second], k=20, weights=[1.0, weight])
    return sorted(scores, key=lambda x: -scores[x])


def main(argv: list[str] | None = None) -> None:
    samples, rows = ranked_questions(__doc__ or "", argv)
    embedder = MiniLMEmbedder()
    questions = embedder.embed([r["question"] for r in rows])
    turns: dict[str, tuple[list[str], np.ndarray]] = {}
    base: list[float] = []
    found: dict[tuple[int, float, float], list[float]] = {s: [] for s in SETTINGS}
    for row, q in zip(rows, questions, strict=True):
        sample = samples[row["sample"]]
        if sample.id not in turns:
            texts = [embed_text(t.text, t.speaker, t.metadata) for t in sample.turns]
            turns[sample.id] = ([t.id for t in sample.turns], embedder.embed(texts))
        ids, vecs = turns[sample.id]
        at = {x: i for i, x in enumerate(ids)}
        ranked = row["ranked"]
        base.append(recall_precision(ranked, row["evidence"], 10)[0])
        for m, b, w in SETTINGS:
            moved = q + b * vecs[[at[x] for x in ranked[:m] if x in at]].mean(axis=0)
            moved /= np.linalg.norm(moved)
            dense = [ids[i] for i in np.argsort(-(vecs @ moved), kind="stable")[:50]]
            found[(m, b, w)].append(
                recall_precision(fused(ranked, dense, w), row["evidence"], 10)[0]
            )
    print(f"run's ranking | {len(base)} questions | R@10 {np.mean(base):.4f}")
    for (m, b, w), recalls in found.items():
        print(f"m={m} b={b} w={w} | R@10 {np.mean(recalls):.4f}")


if __name__ == "__main__":
    main()
