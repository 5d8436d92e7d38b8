"""Supersession in Mnemis facts and PersonalAI triplets against a knowledge-update set's
changes (docs/knowledge.md, "Facts that change")::

    PYTHONPATH=src python -m studies.supersession ../shared/data/ku/ku-dev.json
        [--recipes mnemis,personalai] [--list] [--sweep]
    PYTHONPATH=src python -m studies.supersession ../shared/data/locomo/locomo-dev.json
        --cost locomo

Each sample is added to a temporary SQLite store (its own namespace, the heuristic
tier), then the designs' records are read back.

* A **change** of the set is a question's stale turn with a later evidence turn (the
  question asks for the current value: "previous" questions, whose evidence is the
  earlier value, are left out). It is **found** when a record citing the stale turn is
  superseded (``replaced_by``) by a record citing a later turn of the same question
  that holds a newer value: one of its evidence turns, or one of its later stale turns
  (a value that changed twice, 80 -> 150 -> 60 km, is superseded by the next one).
  Recall = changes found / changes; the strict recall counts evidence turns only.
* A **supersession** is one (record, replacement) link. It **matches** when some turn
  of the record and some turn of its replacement are such a (stale, later) pair of one
  question. Precision = right / made, where right = matching links plus the other
  links a reader judged right (``--list`` prints every link with both records' text,
  so the judgement can be made and published; a match by turns is worth reading too,
  since two questions may share turns).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from memstrata import Memory
from memstrata.models import Derived

Change = tuple[str, str, list[str], list[str]]


def changes(sample: dict[str, Any]) -> tuple[list[Change], set[tuple[str, str]]]:
    """The sample's changes (question, stale turn, later evidence turns, later stale
    turns) and its (stale, later) pairs."""
    when = {t["id"]: t["at"] for t in sample["turns"]}
    found: list[Change] = []
    pairs: set[tuple[str, str]] = set()
    for q in sample["qa"]:
        if q["category"] == "previous":
            continue
        stale_turns = q.get("stale") or []
        for stale in stale_turns:
            later = [e for e in q["evidence"] if when[e] > when[stale]]
            newer = [s for s in stale_turns if when[s] > when[stale]]
            if later:
                found.append((q["question"], stale, later, newer))
                pairs |= {(stale, e) for e in later + newer}
    return found, pairs


def links(records: list[Derived]) -> list[tuple[Derived, Derived]]:
    by_id = {r.id: r for r in records}
    return [(r, by_id[n]) for r in records for n in getattr(r, "replaced_by", []) if n in by_id]


def turns(r: Derived) -> set[str]:
    return {s.episode for s in r.sources}


def measure(data: list[dict[str, Any]], recipe: str, show: bool) -> dict[str, float]:
    total = found = strict = made = matching = 0
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "m.db", recipe=recipe) as m:
        for sample in data:
            ns = sample["sample_id"]
            m.add_many(
                [
                    {
                        "id": t["id"],
                        "speaker": t["speaker"],
                        "text": t["text"],
                        "occurred_at": t["at"],
                        "session": t.get("session"),
                    }
                    for t in sample["turns"]
                ],
                namespace=ns,
            )
            records = [
                r for r in m.store.get_records(ns, "fact", builder=recipe) if isinstance(r, Derived)
            ]
            made_here = links(records)
            asked, pairs = changes(sample)
            for question, stale, later, newer in asked:
                total += 1
                succ = [turns(new) for old, new in made_here if stale in turns(old)]
                hit = any(t & set(later + newer) for t in succ)
                found += hit
                strict += any(t & set(later) for t in succ)
                if show and not hit:
                    print(f"  missed  {ns} {stale} -> {','.join(later)}  ({question})")
            for old, new in made_here:
                ok = any((a, b) in pairs for a in turns(old) for b in turns(new))
                made += 1
                matching += ok
                if show:
                    mark = "match " if ok else "review"
                    print(
                        f"  {mark}  {ns} {sorted(turns(old))} -> {sorted(turns(new))}: "
                        f"{getattr(old, 'fact', '')!r} -> {getattr(new, 'fact', '')!r}"
                    )
    return {
        "changes": total,
        "found": found,
        "recall": found / total if total else 0.0,
        "strict": strict / total if total else 0.0,
        "supersessions": made,
        "matching": matching,
    }


def sweep(data: list[dict[str, Any]]) -> None:
    """The statements' own supersessions (what both designs apply) for the constants of
    :mod:`memstrata.knowledge.slots`, as turn pairs: changes found, pairs superseded,
    pairs matching the set's."""
    from datetime import datetime

    import memstrata.knowledge.slots as slots
    from memstrata.knowledge.turns import TurnReader, supersessions
    from memstrata.models import Episode

    read: list[tuple[dict[str, Any], dict[str, list[Any]]]] = []
    for sample in data:
        eps = [
            Episode(
                id=t["id"],
                namespace="sweep",
                text=t["text"],
                speaker=t["speaker"],
                occurred_at=datetime.fromisoformat(t["at"]),
                seq=n,
                created_at=datetime.fromisoformat(t["at"]),
            )
            for n, t in enumerate(sample["turns"])
        ]
        read.append((sample, TurnReader().read(eps)))
    for least in (1, 2, 3):
        for side in (0.0, 0.25, 0.5):
            slots.ACTION_CHANGES, slots.SIDE_BY_SIDE = least, side
            total = found = made = right = 0
            for sample, said in read:
                done = {(c.old.source, c.new.source) for c in supersessions(said)}
                asked, pairs = changes(sample)
                total += len(asked)
                found += sum(
                    any((stale, e) in done for e in later + newer)
                    for _, stale, later, newer in asked
                )
                made += len(done)
                right += len(done & pairs)
            print(
                f"ACTION_CHANGES={least} SIDE_BY_SIDE={side}: found {found}/{total}, "
                f"turn pairs superseded {made}, matching the set's {right}"
            )


def cost(path: str, fmt: str) -> None:
    """CPU seconds of reading the statements of a QA set's turns, after the parse (which
    the heuristic builders make anyway, and keep)."""
    import time

    from memstrata.eval.qa.formats import load
    from memstrata.knowledge.statements import statements
    from memstrata.nlp import analyse

    turns = [(t.speaker, t.text) for sample in load(path, fmt) for t in sample.turns]
    start = time.process_time()
    for n in range(0, len(turns), 256):
        analyse([text for _, text in turns[n : n + 256]])
    parsed = time.process_time()
    found = sum(len(statements(text, source="t", speaker=who)) for who, text in turns)
    done = time.process_time()
    print(
        f"{len(turns)} turns: parse {parsed - start:.1f} s, statements {done - parsed:.1f} s "
        f"({found} statements)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--recipes", default="mnemis,personalai")
    ap.add_argument("--list", action="store_true", help="print every supersession and miss")
    ap.add_argument("--sweep", action="store_true", help="sweep the slots' constants")
    ap.add_argument("--cost", metavar="FORMAT", help="time the statements of PATH's turns")
    args = ap.parse_args()
    if args.cost:
        cost(args.path, args.cost)
        return
    data = json.loads(Path(args.path).read_text())
    if args.sweep:
        sweep(data)
        return
    for recipe in args.recipes.split(","):
        if args.list:
            print(recipe)
        r = measure(data, recipe, args.list)
        print(
            f"{recipe}: recall {r['recall']:.3f} ({r['found']}/{r['changes']} changes found; "
            f"strict {r['strict']:.3f}); "
            f"{r['supersessions']} supersessions, {r['matching']} matching the set's pairs"
        )


if __name__ == "__main__":
    main()
