"""How clean the heuristic structures are: names made of greetings or function words,
and how well a Mnemis category's members belong together::

    python -m studies.structures ../shared/data/ku/ku-dev.json --format qaset
    python -m studies.structures ../shared/data/locomo/locomo-dev.json --format locomo

Each sample is imported into a temporary store and built by the ``mnemis``,
``personalai`` and ``mindgraph`` recipes (heuristic tier). It prints, per design, how
many of its entities (Mnemis entities and categories, PersonalAI objects, MindGraph
entity nodes) are *noise*: a name whose first word is a greeting or interjection ("Hi
Jonas", "wow") or whose words are all function words ("now_i"; spaCy's English stop
words). And the **cohesion** of Mnemis's layer-1 categories: the mean cosine (MiniLM) of
the names of two members of one category, averaged over categories of at least two
members, beside the mean cosine of two names drawn at random from all members (seeded):
members that belong together are closer than random pairs. The study reads only the
stores' records, so it measures any version of the library (figures:
docs/knowledge.md, "Cleaner structures").
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memstrata.eval.structures import cohesion, noise


@dataclass
class Tally:
    names: int = 0
    noisy: list[str] = field(default_factory=list)

    def add(self, labels: Sequence[str]) -> None:
        self.names += len(labels)
        self.noisy += [x for x in labels if noise(x)]


async def built(path: str, fmt: str) -> AsyncIterator[tuple[Any, Any]]:
    """Each sample of the file, imported into one temporary store and built by the three
    structure recipes (heuristic tier): (the memory, the sample; its namespace is its id)."""
    from memstrata import AsyncMemory
    from memstrata.config import Config
    from memstrata.eval.qa.formats import load

    with tempfile.TemporaryDirectory() as tmp:
        manual: dict[str, Any] = {"build.mode": "manual"}
        config = Config.load(**manual)
        async with AsyncMemory.open(Path(tmp) / "s.db", config=config) as m:
            for sample in load(path, fmt):
                ns = sample.id
                await m.add_many([t.episode() for t in sample.turns], namespace=ns)
                for recipe in ("mnemis", "personalai", "mindgraph"):
                    await m.build(ns, recipe=recipe, tier="heuristic")
                yield m, sample


def records(m: Any, ns: str) -> dict[str, list[Any]]:
    """The entity records of each design in a namespace, read as any version stores them:
    Mnemis entities and categories, PersonalAI objects, MindGraph entity and concept
    nodes (``.name``, or ``.label`` for MindGraph)."""
    get: Any = m.store.get_records  # records of any version's classes
    nodes = get(ns, "concept_node", builder="mindgraph")
    return {
        "mnemis entities": list(get(ns, "entity", builder="mnemis")),
        "mnemis categories": list(get(ns, "category", builder="mnemis")),
        "personalai": list(get(ns, "entity", builder="personalai")),
        "mindgraph": [n for n in nodes if n.node_type in ("entity", "concept") and not n.graph],
    }


def label(record: Any) -> str:
    """What an entity record is called: ``name``, or a MindGraph node's ``label``."""
    return str(record.name if hasattr(record, "name") else record.label)


async def measure(path: str, fmt: str) -> tuple[dict[str, Tally], list[list[str]], Any]:
    tallies = {
        d: Tally() for d in ("mnemis entities", "mnemis categories", "personalai", "mindgraph")
    }
    groups: list[list[str]] = []
    embedder: Any = None
    async for m, sample in built(path, fmt):
        recs = records(m, sample.id)
        ents = {e.id: e for e in recs["mnemis entities"]}
        for design, found in recs.items():
            tallies[design].add([label(r) for r in found])
        for c in recs["mnemis categories"]:
            if c.layer == 1 and c.name != "Speaker":
                groups.append([ents[i].name for i in c.child_ids if i in ents])
        embedder = m.embedder
    return tallies, groups, embedder


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--format", default="locomo")
    args = parser.parse_args(argv)
    tallies, groups, embedder = asyncio.run(measure(args.file, args.format))
    for name, t in tallies.items():
        share = len(t.noisy) / t.names if t.names else 0.0
        shown = ", ".join(sorted(set(t.noisy))[:12])
        print(f"{name}: {t.names} names, {len(t.noisy)} noise ({share:.1%}) {shown}")
    within, rand = cohesion(groups, embedder.embed)
    sizes = [len(g) for g in groups if len(g) >= 2]
    print(
        f"mnemis layer-1 categories: {len(sizes)} of two or more members "
        f"(mean {np.mean(sizes):.1f}); cohesion {within:.3f} within, {rand:.3f} random pairs"
    )


if __name__ == "__main__":
    main()
