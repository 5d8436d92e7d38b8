"""What the reply parser keeps of replies that break their schema (docs/reliability.md).

    python -m studies.salvage_before_after                       # this checkout
    git worktree add /tmp/before a791cca
    PYTHONPATH=/tmp/before/src python -m studies.salvage_before_after   # before salvage

Each reply is one that a server without schema enforcement sends for a design's own
answer model; the line says what the parser made of it (items kept, or the error).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from memstrata.designs.higmem.prompts import TurnAnalysis
from memstrata.designs.memtree.prompts import Summary
from memstrata.designs.mindgraph.prompts import Operations
from memstrata.designs.mnemis.prompts import (
    Attributes,
    CategoryGroups,
    EntityNames,
    Facts,
    NodeSelection,
)
from memstrata.llm.schema import parse_structured


def fact(i: int) -> dict[str, str]:
    return {"source": "Ann", "target": f"t{i}", "relation": "likes", "fact": f"Ann likes t{i}."}


def node(i: int) -> dict[str, Any]:
    return {"op": "add_node", "id": f"n{i}", "type": "entity", "content": "x"}


Case = tuple[str, type[BaseModel], Any, Callable[[Any], Any]]
CASES: list[Case] = [
    ("Mnemis facts, 7 (bound 6)", Facts, {"facts": [fact(i) for i in range(7)]},
     lambda v: len(v.facts)),
    ("Mnemis categories, 16 (bound 15)", CategoryGroups,
     {"categories": [{"category": f"c{i}", "description": "", "tag": [], "indexes": [i]}
                     for i in range(16)]},
     lambda v: len(v.categories)),
    ("Mnemis System-2 selection, 16 (bound 15)", NodeSelection,
     {"nodes": [{"name": f"n{i}", "uuid": f"u{i}", "get_all_children": False}
                for i in range(16)]},
     lambda v: len(v.nodes)),
    ("Mnemis attributes, 2 entities, a 300-character summary (bound 240)", Attributes,
     {"entities": [{"name": "Ann", "summary": "Ann is a nurse in Leeds. " * 12, "tag": []},
                   {"name": "Bo", "summary": "A cat.", "tag": []}]},
     lambda v: len(v.entities)),
    ("Mnemis entity names, a bare list of 16 (bound 12)", EntityNames,
     [f"name {i}" for i in range(16)], lambda v: len(v.names)),
    ("HiGMem turn analysis, 9 keywords (bound 8) and a date", TurnAnalysis,
     {"keywords": [f"k{i}" for i in range(9)], "tags": ["work"],
      "context": "Ann talks about her job.", "dates": [{"phrase": "last May", "date": "2024-05"}],
      "fact": "Ann started a new job."},
     lambda v: f"{len(v.keywords)} keywords, fact {v.fact!r}"),
    ("MindGraph, 3 operations, one of type 'location'", Operations,
     {"operations": [node(1), {**node(2), "type": "location"},
                     {"op": "add_edge", "source": "n1", "target": "n3", "relation": "near"}]},
     lambda v: len(v.operations)),
    ("MindGraph, 41 operations (bound 40)", Operations,
     {"operations": [node(i) for i in range(41)]}, lambda v: len(v.operations)),
    ("MemTree summary cut at the token limit", Summary,
     '{"summary": "Ann moved to Leeds in May. She started as a nurse and then wo',
     lambda v: v.summary),
]  # fmt: skip


def main() -> None:
    for name, model, reply, show in CASES:
        text = reply if isinstance(reply, str) else json.dumps(reply)
        try:
            said = repr(show(parse_structured(text, model)))
        except Exception as exc:  # the old parser's failures are what this shows
            said = f"{type(exc).__name__}: {str(exc)[:80]}"
        print(f"{name}: {said}")


if __name__ == "__main__":
    main()
