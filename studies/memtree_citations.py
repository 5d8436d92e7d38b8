"""Why does collapsed-tree retrieval rank below its own leaves? On a QA file::

    python -m studies.memtree_citations FILE --format qaset|locomo [--k 10]

Each sample is imported into a fresh store and the ``memtree`` tree built (heuristic
tier). Per question, the tree's nodes are ranked by cosine to the question (the
collapsed search of section 3.2, nodes under 0.1 dropped) and turned into a list of
episodes in four ways, each scored as Recall@K over the first K distinct episodes and
both-found@5 (every evidence episode in the first five):

* ``all``: a summary hit cites every episode beneath it, best leaf first (the route
  before 2026-11-27);
* ``cited``: a summary cites the episodes beneath it whose best leaf matches the
  question at least as well as the summary, at least its best one (the route now);
* ``leaves``: summaries skipped, the leaves alone (dense search over the episodes);
* ``rag``: the ``rag`` recipe (dense + BM25) on the same store, and ``rrf(rag, cited)``:
  the two lists fused by reciprocal rank (k = 60), equal weights.

Figures: docs/memtree.md, "Citations of a summary hit".
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import numpy as np

from memstrata.designs.memtree.route import best_leaves, cited
from memstrata.designs.memtree.tree import Tree, unit
from memstrata.eval.qa.formats import FORMATS, load
from memstrata.memory import Memory


def rrf(*lists: list[str], k: int = 60) -> list[str]:
    score: dict[str, float] = {}
    for ranked in lists:
        for r, e in enumerate(dict.fromkeys(ranked)):
            score[e] = score.get(e, 0.0) + 1.0 / (k + r)
    return sorted(score, key=lambda e: -score[e])


def episodes_of(tree: Tree, sims: dict[str, float], way: str) -> list[str]:
    """The collapsed ranking as episodes, a summary citing its episodes ``way``."""
    out: list[str] = []
    for nid in sorted(sims, key=lambda i: -sims[i]):
        if sims[nid] < 0.1:
            break
        if tree.is_leaf(nid):
            out.append(tree.nodes[nid].sources[0].episode)
            continue
        if way == "leaves":
            continue
        best = best_leaves(tree, nid, sims)
        ranked = sorted(best, key=best.__getitem__, reverse=True)
        out.extend(cited(ranked, best, sims[nid]) if way == "cited" else ranked)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--format", choices=list(FORMATS), default="qaset")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args(argv)

    recall: dict[str, list[float]] = {}
    both5: dict[str, list[float]] = {}
    with Memory.open(Path(tempfile.mkdtemp()) / "m.db", recipe="memtree") as m:
        for sample in load(args.file, args.format):
            ns = sample.id
            m.add_many([t.episode() for t in sample.turns], namespace=ns)
            m.build(ns, recipe="memtree", tier="heuristic")
            tree = Tree.load(m.store, m.embedder, ns)
            ids, rows = tree.matrix()
            qs = [q for q in sample.qa if q.evidence and not q.abstain]
            qvecs = unit(np.asarray(m.embedder.embed([q.question for q in qs]), dtype=np.float32))
            for q, qvec in zip(qs, qvecs, strict=True):
                sims = dict(zip(ids, (rows @ qvec).tolist(), strict=True))
                hits = m.search(q.question, recipe="rag", k=50, namespace=ns, max_tokens=None)
                lists = {way: episodes_of(tree, sims, way) for way in ("all", "cited", "leaves")}
                lists["rag"] = [e for h in hits.hits for e in h.sources]
                lists["rrf(rag, cited)"] = rrf(lists["rag"], lists["cited"])
                gold = set(q.evidence)
                for way, ranked in lists.items():
                    first = list(dict.fromkeys(ranked))
                    recall.setdefault(way, []).append(len(gold & set(first[: args.k])) / len(gold))
                    both5.setdefault(way, []).append(float(gold <= set(first[:5])))
    print(f"{'list':<18} R@{args.k:<5} both-found@5")
    for way in recall:
        print(f"{way:<18} {statistics.mean(recall[way]):.3f}  {statistics.mean(both5[way]):.3f}")


if __name__ == "__main__":
    main()
