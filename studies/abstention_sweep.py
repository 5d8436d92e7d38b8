"""How the LLM-free answer's abstention rules were chosen (docs/benchmarks.md, "Abstention").

    python -m studies.abstention_sweep ../shared/data/locomo/locomo-dev.json --format locomo
    python -m studies.abstention_sweep ../shared/data/realtalk/realtalk-dev.json --format qaset

Each sample is added to a fresh in-memory store; every question is searched with the
recipe (``default``) and the extract's two signals are kept: the best support among the
sentences by or about the speakers the question names (all sentences when it names
none), and the best support among the other speakers' sentences. Then, for each speaker
gap and support threshold: the share of abstention questions that abstain (recall), the
share of abstentions that were due (precision), and the share of answerable questions
that abstain (false abstention).
"""

from __future__ import annotations

import argparse
import asyncio
import math

from memstrata.embed import MiniLMEmbedder
from memstrata.engine.extractive import _about, _named_speakers, _quotes, _support
from memstrata.eval.qa.formats import load
from memstrata.memory import AsyncMemory

GAPS = [math.inf, 0.0, 0.1, 0.2]
THRESHOLDS = [0.0, 0.3, 0.4, 0.5, 0.6]
Row = tuple[bool, float | None, float | None]


async def signals(path: str, fmt: str, recipe: str) -> list[Row]:
    """Per question: (abstention question?, best own support, best other support)."""
    rows: list[Row] = []
    embedder = MiniLMEmbedder()
    for sample in load(path, fmt):
        ns = sample.id
        async with AsyncMemory.open(":memory:", embedder=embedder, namespace=ns) as m:
            await m.add_many([t.episode() for t in sample.turns])
            ctx = m.engine.context(ns, "heuristic")
            for q in sample.qa:
                hits = (await m.search(q.question, recipe=recipe)).hits[:20]
                quotes = _quotes(ctx, ns, hits)
                if not quotes:
                    rows.append((q.abstain, None, None))
                    continue
                people = _named_speakers(ctx, ns, q.question)
                scores = _support(ctx, q.question, quotes, people)
                mine = [s for x, s in zip(quotes, scores, strict=True) if _about(x, people)]
                other = [s for x, s in zip(quotes, scores, strict=True) if not _about(x, people)]
                if not people:
                    mine, other = scores, []
                rows.append((q.abstain, max(mine, default=None), max(other, default=None)))
    return rows


def abstains(row: Row, gap: float, threshold: float) -> bool:
    _, mine, other = row
    if mine is None or mine < threshold:
        return True
    return other is not None and other - mine > gap


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--format", default="locomo")
    ap.add_argument("--recipe", default="default")
    args = ap.parse_args()
    rows = asyncio.run(signals(args.path, args.format, args.recipe))
    asked = sum(1 for r in rows if r[0])
    print(f"{len(rows)} questions, {asked} abstention questions")
    print("| speaker gap | threshold | recall | precision | false abstention |")
    print("|---|---|---|---|---|")
    for gap in GAPS:
        for t in THRESHOLDS:
            said = [(r[0], abstains(r, gap, t)) for r in rows]
            right = sum(1 for a, x in said if a and x)
            total = sum(1 for _, x in said if x)
            wrong = sum(1 for a, x in said if x and not a)
            recall = f"{right / asked:.3f}" if asked else "-"
            precision = f"{right / total:.3f}" if total and asked else "-"
            false = f"{wrong / (len(rows) - asked):.3f}"
            print(f"| {gap} | {t} | {recall} | {precision} | {false} |")


if __name__ == "__main__":
    main()
