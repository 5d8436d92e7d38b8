"""Would a turn that says more be evidence more often? Over a ``bench qa`` run::

    python -m studies.informative FILE --format F DIR/questions.jsonl

"Hey Mel, what's up? Been a busy week since we talked." and "Bye Caroline. I'm here for
you." rank among a question's first ten for the speaker's name and warm words, and say
nothing. A turn's information is the summed idf (over its conversation) of its distinct
content words; each question's ranking (the run's first 50, scored by their reciprocal
rank, k = 20, as the route fuses) is re-ordered with the score times a prior from it:

* ``pct a``: 1 + a x (the turn's percentile of information in its conversation - 0.5);
* ``cap c``: min(1, information / c), a turn under ``c`` nats of idf losing in proportion.

It prints Recall@10 for each (questions with evidence, adversarial ones left out).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from memstrata.eval.metrics import recall_precision
from memstrata.retrieval.text import content_terms
from studies.runs import ranked_questions

PCT = (0.1, 0.2, 0.4, 0.8)
CAP = (5.0, 10.0, 15.0, 20.0, 30.0)


def information(texts: dict[str, str]) -> dict[str, float]:
    """Each turn's summed idf of its distinct content words, over ``texts``."""
    terms = {i: set(content_terms(t)) for i, t in texts.items()}
    df = Counter(w for ts in terms.values() for w in ts)
    n = len(terms)
    return {i: sum(math.log(n / df[w]) for w in ts) for i, ts in terms.items()}


def main(argv: list[str] | None = None) -> None:
    samples, rows = ranked_questions(__doc__ or "", argv)
    info: dict[str, dict[str, float]] = {}
    pct: dict[str, dict[str, float]] = {}
    for sid, sample in samples.items():
        info[sid] = information({t.id: t.text for t in sample.turns})
        order = sorted(info[sid], key=info[sid].__getitem__)
        pct[sid] = {i: r / max(1, len(order) - 1) for r, i in enumerate(order)}

    def recall(prior: str, a: float) -> float:
        out = []
        for row in rows:
            inf, p = info[row["sample"]], pct[row["sample"]]
            ranked = [x for x in row["ranked"] if x in inf]
            score = {x: 1 / (20 + i) for i, x in enumerate(ranked)}
            for x in ranked:
                score[x] *= 1 + a * (p[x] - 0.5) if prior == "pct" else min(1.0, inf[x] / a)
            order = sorted(ranked, key=lambda x: -score[x])
            out.append(recall_precision(order, row["evidence"], 10)[0])
        return float(np.mean(out))

    print(f"the run's ranking | {len(rows)} q. | R@10 {recall('pct', 0.0):.4f}")
    for a in PCT:
        print(f"pct {a} | R@10 {recall('pct', a):.4f}")
    for c in CAP:
        print(f"cap {c} | R@10 {recall('cap', c):.4f}")


if __name__ == "__main__":
    main()
