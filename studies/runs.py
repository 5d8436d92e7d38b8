"""What the studies over a ``bench qa`` run share: its command line and its questions."""

from __future__ import annotations

import argparse
import json
from typing import Any

from memstrata.eval.qa.formats import FORMATS, load


def ranked_questions(doc: str, argv: list[str] | None) -> tuple[dict[str, Any], list[dict]]:
    """The samples of FILE by id, and the run's rows of the questions a ranking is scored
    on: with evidence, not abstaining, not adversarial. ``doc``: the study's docstring,
    whose first paragraph is the command's description."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("run", help="questions.jsonl of a bench qa run on FILE")
    parser.add_argument("--format", choices=list(FORMATS), default="qaset")
    args = parser.parse_args(argv)
    samples = {s.id: s for s in load(args.file, args.format)}
    with open(args.run, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    rows = [r for r in rows if r["evidence"] and not r["abstain"]]
    return samples, [r for r in rows if r["category"] != "adversarial"]
