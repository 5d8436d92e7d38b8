"""The stores ``memstrata bench explorer`` looks at: LoCoMo conversations built by every
recipe that builds something, and a synthetic Mnemis namespace of any size.

The synthetic one writes Mnemis records through the store directly (building 5,000
entities with the heuristic tier would take long and give no control over the size):
one episode per entity, saying whom it met and works with, so every record's
provenance is real characters of a stored episode and the records pass the store's
invariants (:mod:`memstrata.eval.invariants`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstrata import Memory
from memstrata.errors import InvalidInputError
from memstrata.importers import locomo
from memstrata.models import Derived, Entity, Fact, Span, record_kind

#: the built-in recipes that build structures (the others only index episodes)
RECIPES = ("mnemis", "personalai", "higmem", "memtree", "mindgraph")
BUILDER = "mnemis"
#: entities per first-layer category, first-layer categories per second-layer one
GROUP = 50
GROUP_2 = 10
FIRST = ("Ada", "Bruno", "Chen", "Dara", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jules")
LAST = ("Moreau", "Okafor", "Silva", "Tanaka", "Novak", "Reyes", "Lund", "Haddad", "Kim")
#: builds only when asked: these stores are built on the heuristic tier, or written here
MANUAL: dict[str, Any] = {"build.mode": "manual"}
PLACES = ("the harbour", "the library", "a concert", "the station", "the market", "a lab")


@dataclass
class Fixture:
    """One namespace of the LoCoMo store: a conversation built by one recipe."""

    namespace: str
    recipe: str
    speakers: list[str]
    question: str
    episodes: int = 0


@dataclass
class Synthetic:
    namespace: str
    entities: int
    facts: int
    categories: int
    episodes: int
    notes: list[str] = field(default_factory=list)


def locomo_file(data: Path) -> Path:
    """The LoCoMo JSON file of ``data`` (a file, or a directory holding one: the dev
    split first)."""
    if data.is_file():
        return data
    found = sorted(data.glob("*.json"), key=lambda p: ("dev" not in p.name, p.name))
    if not found:
        raise InvalidInputError(f"no LoCoMo .json file in {data}")
    return found[0]


def build_locomo(
    db: Path,
    data: Path,
    conversations: int,
    recipes: tuple[str, ...] = RECIPES,
    tick: Callable[[str], None] = lambda _: None,
) -> list[Fixture]:
    """Each of the first ``conversations`` conversations, once per recipe, in namespace
    ``CONV-RECIPE``, built on the heuristic tier; namespaces already in ``db`` are kept."""
    convs = locomo.load(locomo_file(data))[:conversations]
    out = []
    with Memory.open(db, **MANUAL) as memory:
        have = set(memory.namespaces())
        for conv in convs:
            speakers = list(dict.fromkeys(str(t["speaker"]) for t in conv.turns if t["speaker"]))
            asked = next((q for q in conv.questions if q.evidence and q.category != 5), None)
            question = asked.question if asked else f"What did {speakers[0]} talk about?"
            for recipe in recipes:
                ns = f"{conv.namespace}-{recipe}"
                tick(f"building {ns}")
                if ns not in have:
                    memory.add_many(conv.turns, namespace=ns)
                    memory.build(ns, recipe=recipe, tier="heuristic")
                out.append(Fixture(ns, recipe, speakers, question, len(conv.turns)))
    return out


def _name(i: int) -> str:
    return f"{FIRST[i % len(FIRST)]} {LAST[(i // len(FIRST)) % len(LAST)]} {i:05d}"


def synthetic_mnemis(db: Path, entities: int, namespace: str, seed: int = 5) -> Synthetic:
    """``entities`` Mnemis entities, two facts per entity (to a random earlier one, most
    to a few hubs, as conversations have), one in fifty superseded, and two layers of
    categories; one episode per entity holds the characters they rest on."""
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    turns: list[dict[str, Any]] = []
    records: list[Derived] = []
    for i in range(entities):
        # preferential attachment: half of the links go to the first few percent
        met = rng.randrange(max(1, i // 20 + 1)) if rng.random() < 0.5 else rng.randrange(i or 1)
        works = rng.randrange(i or 1)
        a, b, c = _name(i), _name(met), _name(works)
        first = f"{a} met {b} at {rng.choice(PLACES)}."
        second = f" {a} works with {c}."
        text = first + (second if i else "")
        eid = f"s{i:05d}"
        turns.append(
            {"id": eid, "text": text, "speaker": a.split()[0], "at": start + timedelta(hours=i)}
        )
        records.append(
            Entity(
                id=f"ent-{i:05d}",
                namespace=namespace,
                name=a,
                summary=f"met {b}",
                entity_type="person",
                tags=[LAST[(i // len(FIRST)) % len(LAST)]],
                sources=[Span(episode=eid, start=0, end=len(a))],
            )
        )
        if not i:
            continue
        for k, (other, span, relation) in enumerate(
            ((met, (0, len(first)), "met"), (works, (len(first) + 1, len(text)), "works_with"))
        ):
            records.append(
                Fact(
                    id=f"fact-{i:05d}-{k}",
                    namespace=namespace,
                    subject_id=f"ent-{i:05d}",
                    object_id=f"ent-{other:05d}",
                    relation=relation,
                    fact=text[span[0] : span[1]],
                    entity_ids=[f"ent-{i:05d}", f"ent-{other:05d}"],
                    valid_at=start + timedelta(hours=i),
                    invalid_at=start + timedelta(hours=i + 1) if i % 50 == 1 and k else None,
                    sources=[Span(episode=eid, start=span[0], end=span[1])],
                )
            )
    layer1 = _categories(namespace, [r for r in records if isinstance(r, Entity)], 1, GROUP)
    layer2 = _categories(namespace, layer1, 2, GROUP_2)
    records += layer1 + layer2
    with Memory.open(db, **MANUAL) as memory:
        memory.add_many(turns, namespace=namespace)
        store = memory._inner.store
        keys = [e.key for e in store.get_episodes(namespace, [str(t["id"]) for t in turns])]
        store.write_records(namespace, records, built=(BUILDER, keys), owner=BUILDER)
    facts = sum(isinstance(r, Fact) for r in records)
    return Synthetic(namespace, entities, facts, len(layer1) + len(layer2), len(turns))


def _categories(namespace: str, children: list[Derived], layer: int, size: int) -> list[Derived]:
    """Categories of ``size`` consecutive children each; a child's parent ids are set.
    (Mnemis's kind, read through the registry as any code outside the design does.)"""
    category = record_kind("category")
    assert category is not None, "the mnemis design is not installed"
    out: list[Derived] = []
    for n, at in enumerate(range(0, len(children), size)):
        group = children[at : at + size]
        cid = f"cat-{layer}-{n:04d}"
        for child in group:
            if isinstance(child, category):
                getattr(child, "parent_ids").append(cid)  # noqa: B009
        out.append(
            category.model_validate(
                {
                    "id": cid,
                    "namespace": namespace,
                    "name": f"group {layer}.{n}",
                    "layer": layer,
                    "summary": f"{len(group)} people who met",
                    "child_ids": [c.id for c in group],
                    "sources": list(group[0].sources[:1]),
                }
            )
        )
    return out
