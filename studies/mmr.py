"""Would the first ten say more if they repeated each other less? Over a ``bench qa`` run::

    memstrata bench qa FILE --format F --recipes default --no-answers --no-cache --out DIR
    python -m studies.mmr FILE --format F DIR/questions.jsonl

Maximal marginal relevance over the run's first ``n`` candidates: the next pick is the
candidate with the best ``lam * relevance - (1 - lam) * (its highest cosine with a turn
already picked)``, the relevance being the candidate's place in the run's ranking
(reciprocal rank, k = 60, scaled so the first is 1). ``lam = 1`` is the run's ranking.
A question about several things ("What events has John taken part in?") may fill its
first ten with turns about one of them; this asks whether pushing near-repeats down lets
the others in. Prints Recall@10 over the questions with evidence that are not
adversarial, the multi-hop ones alone when the set has them, and the share of questions
with all their evidence in the first five (HotpotQA's both-found@5).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.eval.metrics import recall_precision
from memstrata.retrieval.documents import embed_text
from studies.runs import ranked_questions

SETTINGS = [(20, 0.9), (20, 0.8), (20, 0.7), (30, 0.9), (30, 0.8), (30, 0.7), (30, 0.5)]


def mmr(ranked: Sequence[str], vecs: np.ndarray, lam: float, k: int = 10) -> list[str]:
    """``ranked`` re-ordered by maximal marginal relevance (``vecs``: one row per id,
    normalised); the first ``k`` picked in turn, the rest after them in their order."""
    rel = np.array([61.0 / (61.0 + i) for i in range(len(ranked))])
    sims = vecs @ vecs.T
    picked: list[int] = []
    redundancy = np.zeros(len(ranked))  # a turn unlike every pick repeats nothing
    for _ in range(min(k, len(ranked))):
        score = lam * rel - (1 - lam) * redundancy
        score[picked] = -np.inf
        best = int(np.argmax(score))
        picked.append(best)
        redundancy = np.maximum(redundancy, sims[best])
    rest = [i for i in range(len(ranked)) if i not in picked]
    return [ranked[i] for i in picked + rest]


def main(argv: list[str] | None = None) -> None:
    samples, rows = ranked_questions(__doc__ or "", argv)
    embedder = MiniLMEmbedder()
    turns: dict[str, dict[str, np.ndarray]] = {}
    found: dict[tuple[int, float], list[float]] = defaultdict(list)
    multi: dict[tuple[int, float], list[float]] = defaultdict(list)
    whole5: dict[tuple[int, float], list[float]] = defaultdict(list)
    for row in rows:
        sample = samples[row["sample"]]
        if sample.id not in turns:
            texts = [embed_text(t.text, t.speaker, t.metadata) for t in sample.turns]
            vecs = embedder.embed(texts)
            turns[sample.id] = {t.id: vecs[i] for i, t in enumerate(sample.turns)}
        at = turns[sample.id]
        ranked = [x for x in row["ranked"] if x in at]
        for n, lam in [(0, 1.0), *SETTINGS]:
            head = ranked[:n] if n else ranked
            order = mmr(head, np.array([at[x] for x in head]), lam) if n else ranked
            order = order + ranked[len(head) :]
            got = recall_precision(order, row["evidence"], 10)[0]
            found[(n, lam)].append(got)
            whole5[(n, lam)].append(float(recall_precision(order, row["evidence"], 5)[0] == 1.0))
            if row["category"] == "multi-hop":
                multi[(n, lam)].append(got)
    for (n, lam), recalls in found.items():
        hop = f" | multi-hop {np.mean(multi[(n, lam)]):.4f}" if multi else ""
        name = "run's ranking" if not n else f"n={n} lam={lam}"
        all5 = np.mean(whole5[(n, lam)])
        print(f"{name} | {len(recalls)} q. | R@10 {np.mean(recalls):.4f}{hop} | all@5 {all5:.3f}")


if __name__ == "__main__":
    main()
