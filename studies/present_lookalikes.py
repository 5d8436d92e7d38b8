"""What ordering look-alike turns by time would give, measured on a ``bench qa`` run of a
QA set whose questions name ``stale`` turns (an alternative to the engine's order of the
present, not adopted)::

    python -m studies.present_lookalikes RUN_DIR DATA_FILE [--taus 0.3,0.4,0.5,0.6,0.7]

The engine moves only hits whose turns are known to be in a succession of values
(:mod:`memstrata.knowledge.present`). The alternative: for a question about now, any two
of the first ten source turns from different sessions whose cosine (MiniLM) is at least
``tau`` are taken as two statements of one thing, and each such group is put latest
first among its places. Per recipe and ``tau`` it prints "current first" over the
questions with stale turns, Recall@5 over the other questions with evidence, and how
many questions got a different order. Reads the run's ``ranked`` lists; searches
nothing. Figures: docs/knowledge.md, "Search and answers that know the present".
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path
from statistics import mean
from typing import Any

from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.eval.qa.metrics_retrieval import current_first
from memstrata.knowledge.asking import asked


def lookalikes_latest_first(
    ranked: list[str], turns: dict[str, dict[str, Any]], vec: dict[str, Any], tau: float
) -> list[str]:
    head = ranked[:10]
    parent = {t: t for t in head}

    def root(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    for i, a in enumerate(head):
        for b in head[i + 1 :]:
            if turns[a].get("session") == turns[b].get("session"):
                continue
            if float(vec[a] @ vec[b]) >= tau:
                parent[root(b)] = root(a)
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(head):
        groups.setdefault(root(t), []).append(i)
    out = list(head)
    for places in groups.values():
        latest = sorted(
            places, key=lambda i: -datetime.fromisoformat(turns[head[i]]["at"]).timestamp()
        )
        for place, i in zip(places, latest, strict=True):
            out[place] = head[i]
    return out + ranked[10:]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run", type=Path)
    ap.add_argument("data", type=Path)
    ap.add_argument("--taus", default="0.3,0.4,0.5,0.6,0.7")
    args = ap.parse_args()
    samples = json.loads(args.data.read_text())
    turns = {(s["sample_id"], t["id"]): t for s in samples for t in s["turns"]}
    qs = {(s["sample_id"], q["id"]): q for s in samples for q in s["qa"]}
    keys = list(turns)
    vectors = MiniLMEmbedder().embed([turns[k]["text"] for k in keys])
    vec = {k: vectors[i] for i, k in enumerate(keys)}
    rows = [json.loads(line) for line in (args.run / "questions.jsonl").open()]
    for recipe in sorted({r["recipe"] for r in rows}):
        for tau in [float(t) for t in args.taus.split(",")]:
            first, r5, moved = [], [], 0
            for r in (r for r in rows if r["recipe"] == recipe):
                q = qs[(r["sample"], r["qid"])]
                mine = {t: turns[(r["sample"], t)] for t in r["ranked"]}
                mvec = {t: vec[(r["sample"], t)] for t in r["ranked"]}
                new = r["ranked"]
                if asked(q["question"]) == "now":
                    new = lookalikes_latest_first(r["ranked"], mine, mvec, tau)
                moved += new != r["ranked"]
                if q.get("stale"):
                    first.append(current_first(new, q["evidence"], q["stale"]))
                elif q.get("evidence"):
                    r5.append(len(set(new[:5]) & set(q["evidence"])) / len(set(q["evidence"])))
            print(
                f"{recipe:18} tau {tau:.1f}  current first {mean(first):.3f}  "
                f"R@5 (others) {mean(r5):.3f}  reordered {moved}"
            )


if __name__ == "__main__":
    main()
