"""Checks of the heuristic turn notes on a LoCoMo file, over a store built with the
``higmem`` recipe (``memstrata bench locomo FILE --recipe higmem --db STORE`` builds one):

* dates: for temporal questions with one evidence turn whose gold answer is a calendar
  date, how often a date the evidence turn's note resolved equals it, against the turn's
  own (session) date;
* keywords: for single- and multi-hop questions with one evidence turn, the share of the
  answer's words (those in the turn) that the note's keywords hold, against the turn's
  first 8 content terms.

Usage: python -m studies.higmem_notes_check STORE LOCOMO_FILE
"""

from __future__ import annotations

import re
import sys
from datetime import datetime

from dateparser import parse

from memstrata.designs.higmem.records import TurnNote
from memstrata.importers import locomo
from memstrata.retrieval.documents import caption_of
from memstrata.retrieval.text import content_terms
from memstrata.store import open_store


def same_date(date: str, gold_text: str, gold: datetime) -> bool:
    """``date`` (YYYY[-MM[-DD]]) equals the gold answer at the answer's own precision."""
    parts = date.split("-")
    ref = [f"{gold.year:04d}", f"{gold.month:02d}", f"{gold.day:02d}"]
    has_day = bool(re.search(r"\b\d{1,2}\b", re.sub(r"\b\d{4}\b", "", gold_text)))
    has_month = bool(re.search(r"[A-Za-z]{3,}", gold_text))
    want = 3 if has_day else 2 if has_month else 1
    return len(parts) >= want and parts[:want] == ref[:want]


def main(store_path: str, data_path: str) -> None:
    store = open_store(store_path)
    convs = locomo.load(data_path)
    n = dated = resolved = own = 0
    total = in_keywords = in_first = 0
    for c in convs:
        notes = {
            r.turn_id: r
            for r in store.get_records(c.namespace, "turn_note", builder=None)
            if isinstance(r, TurnNote)
        }
        eps = {e.id: e for e in store.get_episodes(c.namespace, [t["id"] for t in c.turns])}
        for q in c.questions:
            if len(q.evidence) != 1 or q.evidence[0] not in eps:
                continue
            ep, note = eps[q.evidence[0]], notes.get(q.evidence[0])
            if q.category == 2 and not re.search(
                r"\b(before|after|week|weekend)\b", q.answer, re.I
            ):
                gold = parse(q.answer, settings={"PREFER_DAY_OF_MONTH": "first"})
                if gold is None:
                    continue
                n += 1
                if note is not None and note.dates:
                    dated += 1
                    resolved += any(same_date(d["date"], q.answer, gold) for d in note.dates)
                if ep.occurred_at is not None:
                    own += same_date(ep.occurred_at.strftime("%Y-%m-%d"), q.answer, gold)
            elif q.category in (1, 4) and note is not None:
                terms = content_terms(f"{ep.text} {caption_of(ep.metadata) or ''}")
                answer = [t for t in content_terms(q.answer) if t in set(terms)]
                speaker = {w.lower() for w in (ep.speaker or "").split()}
                first = [t for t in terms if t not in speaker][:8]
                total += len(answer)
                in_keywords += sum(t in note.keywords for t in answer)
                in_first += sum(t in first for t in answer)
    print(f"temporal questions with one evidence turn and a calendar-date answer: {n}")
    print(f"  evidence turn has a resolved date phrase: {dated}")
    print(f"  a resolved date equals the gold answer: {resolved}")
    print(f"  the turn's own (session) date equals the gold answer: {own}")
    print(f"answer words (categories 1 and 4, one evidence turn, word in the turn): {total}")
    print(f"  in the note's keywords: {in_keywords} ({in_keywords / max(1, total):.3f})")
    print(f"  in the turn's first 8 content terms: {in_first} ({in_first / max(1, total):.3f})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
