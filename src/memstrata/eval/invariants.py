"""What must hold in a store after any crash, once the work is finished: read through the
public :class:`~memstrata.store.Store` API only, so it checks what a user would see.

* **episodes**: every expected episode is there once, with the content it was given and
  its embedding; nothing else is (a deleted id stays deleted);
* **provenance**: every record's sources are spans of existing episodes, inside their text;
* **links**: every id a record names (a fact's ends, a category's children, a tree node's
  parent, an edge's ends, an event's turns) exists, in the same builder's records;
* **orphans**: no record rests on nothing (MemTree's inner nodes rest on the leaves
  beneath them, so one is an orphan when no leaf is);
* **duplicates**: no two records of a builder say the same thing: identical content with
  the same sources, or the same natural key (an entity's name, one leaf or one note per
  episode, a concept's label);
* **finished**: no builder has episodes queued, failed or dead, and no repair waits.

Design-specific invariants (a tree's depths, a hierarchy's layers) are the builders' own
``check``; :func:`design_problems` runs them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from memstrata.models import Derived, Episode, load_kinds
from memstrata.store.base import Store

if TYPE_CHECKING:
    from memstrata.memory import AsyncMemory

#: the fields an expected episode is compared on (as import lines spell them)
EPISODE_FIELDS = ("text", "speaker", "session")


@dataclass
class Findings:
    """Everything that does not hold, as short sentences per invariant (empty: all hold)."""

    lost: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    altered: list[str] = field(default_factory=list)
    unembedded: list[str] = field(default_factory=list)
    dangling: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)
    structure: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(self.problems().values())

    def problems(self) -> dict[str, list[str]]:
        """The invariants that fail, each with (at most 20 of) its sentences."""
        return {k: v[:20] for k, v in asdict(self).items() if v}

    @property
    def invariant_failures(self) -> int:
        """Broken invariants other than lost, duplicated or orphaned data."""
        return sum(
            len(v) for k, v in asdict(self).items() if k not in {"lost", "duplicates", "orphans"}
        )


def all_episodes(store: Store, namespace: str) -> list[Episode]:
    """Every episode of the namespace, in insertion order."""
    return store.all_episodes(namespace)


def builder_records(store: Store, namespace: str, builder: str) -> list[Derived]:
    return [r for kind in load_kinds() for r in store.get_records(namespace, kind, builder=builder)]


def check_episodes(
    store: Store,
    namespace: str,
    expected: Mapping[str, Mapping[str, Any]],
    findings: Findings,
) -> list[Episode]:
    """Compare the namespace's episodes with ``expected`` (id -> import line)."""
    stored = all_episodes(store, namespace) if store.has_namespace(namespace) else []
    counts = Counter(ep.id for ep in stored)
    findings.duplicates += [f"episode {i} is stored {n} times" for i, n in counts.items() if n > 1]
    findings.lost += sorted(f"episode {i} is missing" for i in expected if i not in counts)
    findings.unexpected += sorted(f"episode {i} is stored" for i in counts if i not in expected)
    for ep in stored:
        want = expected.get(ep.id)
        if want is not None:
            for key in EPISODE_FIELDS:
                if key in want and want[key] != getattr(ep, key):
                    findings.altered.append(f"episode {ep.id}: {key} differs from the input")
    return stored


def _linked(record: Derived, name: str) -> list[str]:
    value = getattr(record, name)
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def check_records(
    store: Store,
    namespace: str,
    builder: str,
    episodes: Sequence[Episode],
    findings: Findings,
) -> list[Derived]:
    """Provenance, links, orphans and duplicates of one builder's records."""
    records = builder_records(store, namespace, builder)
    texts = {ep.id: ep.text for ep in episodes}
    by_id = {r.id: r for r in records}
    for rec in records:
        for span in rec.sources:
            if span.episode not in texts:
                findings.dangling.append(
                    f"{builder} {rec.kind} {rec.id} cites a missing episode {span.episode}"
                )
            elif span.end > len(texts[span.episode]) or span.start > span.end:
                findings.dangling.append(
                    f"{builder} {rec.kind} {rec.id} cites {span.episode}"
                    f"[{span.start}:{span.end}], outside its text"
                )
        for name, kinds in type(rec).links:
            for ref in _linked(rec, name):
                if kinds == "episode":
                    ok = ref in texts
                else:
                    ok = ref in by_id and by_id[ref].kind in kinds.split("|")
                if not ok:
                    findings.dangling.append(
                        f"{builder} {rec.kind} {rec.id}: {name} names a missing {kinds} {ref}"
                    )
    findings.orphans += _orphans(builder, records, texts)
    findings.duplicates += _duplicates(builder, records)
    return records


def _orphans(builder: str, records: Sequence[Derived], texts: Mapping[str, str]) -> list[str]:
    """Records resting on no existing episode. A record of a kind with a ``parent_field``
    (a tree's node) rests on its own sources or on any record beneath it; a root
    (``is_root``: an empty tree's) on nothing, which is fine."""
    children: dict[str, list[str]] = {}
    for rec in records:
        field_name = type(rec).parent_field
        parent = getattr(rec, field_name) if field_name else None
        if parent is not None:
            children.setdefault(parent, []).append(rec.id)
    by_id = {r.id: r for r in records}
    grounded: dict[str, bool] = {}

    def rests(rid: str, depth: int = 0) -> bool:
        if rid not in grounded:
            rec = by_id[rid]
            own = any(s.episode in texts for s in rec.sources)
            grounded[rid] = own or (
                depth < 10_000
                and any(rests(c, depth + 1) for c in children.get(rid, []) if c in by_id)
            )
        return grounded[rid]

    out = []
    for rec in records:
        if rec.is_root():
            continue
        if not rests(rec.id):
            out.append(f"{builder} {rec.kind} {rec.id} rests on no existing episode")
    return out


def _content(rec: Derived) -> str:
    body = rec.model_dump(mode="json", exclude={"id", "created_at", "updated_at", "sources"})
    spans = sorted((s.episode, s.start, s.end) for s in rec.sources)
    return json.dumps([rec.kind, body, spans], sort_keys=True)


def _natural_keys(records: Sequence[Derived]) -> Iterable[tuple[str, Any]]:
    """(name, key) pairs that are unique in a sound build: each kind states its own
    (:meth:`~memstrata.models.Derived.natural_keys`)."""
    for cls in dict.fromkeys(type(r) for r in records):
        yield from cls.natural_keys(records)


def _duplicates(builder: str, records: Sequence[Derived]) -> list[str]:
    out = []
    content = Counter(_content(r) for r in records)
    out += [f"{builder}: {n} identical records {c[:120]}" for c, n in content.items() if n > 1]
    keys = Counter(_natural_keys(records))
    out += [f"{builder} {k[0]} {k[1]!r} is held {n} times" for k, n in keys.items() if n > 1]
    return out


def check_finished(
    store: Store, namespace: str, builders: Iterable[str], findings: Findings
) -> None:
    """Every builder has folded in every episode, and no repair waits."""
    if not store.has_namespace(namespace):
        return
    (stats,) = store.stats(namespace)
    for builder in builders:
        counts = stats.builds.get(builder, {})
        if counts.get("done", 0) != stats.episodes:
            findings.unfinished.append(
                f"{builder}: {counts.get('done', 0)} of {stats.episodes} episodes done"
            )
        for status in ("failed", "dead"):
            if counts.get(status):
                findings.unfinished.append(f"{builder}: {counts[status]} episode(s) {status}")
    for builder, n in stats.repairs.items():
        findings.unfinished.append(f"{builder}: {n} repair(s) waiting")


def check_store(
    store: Store,
    namespace: str,
    expected: Mapping[str, Mapping[str, Any]],
    builders: Sequence[str] = (),
    *,
    finished: bool = True,
    gone_words: Sequence[str] = (),
) -> Findings:
    """Every invariant of the module docstring for one namespace: its episodes against
    ``expected`` (id -> import line), the records of ``builders`` (default: every builder
    that owns records there), that they finished when ``finished``, and that no record
    of any builder still says one of ``gone_words`` (text a delete or update removed)."""
    findings = Findings()
    episodes = check_episodes(store, namespace, expected, findings)
    owners: list[str] = list(builders)
    if store.has_namespace(namespace):
        (stats,) = store.stats(namespace)
        owners += [b for b in stats.records_by_builder if b not in owners]
        if stats.embedded != stats.episodes:
            findings.unembedded.append(
                f"{stats.episodes - stats.embedded} episode(s) without an embedding"
            )
    for builder in owners:
        records = check_records(store, namespace, builder, episodes, findings)
        for word in gone_words:
            findings.structure += [
                f"{builder} {r.kind} {r.id} still says {word!r}"
                for r in records
                if word.casefold() in _content(r).casefold()
            ]
    if finished:
        check_finished(store, namespace, builders, findings)
    return findings


async def design_problems(memory: AsyncMemory, namespace: str, recipes: Iterable[str]) -> list[str]:
    """The builders' own structural checks (``Builder.check``) for these recipes."""
    out: list[str] = []
    ctx = memory.engine.context(namespace, "heuristic")
    for recipe in recipes:
        for builder in memory.engine.builders(recipe):
            out += [f"{builder.name}: {p}" for p in await builder.check(ctx, namespace)]
    return out


def expected_lines(lines: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """id -> the fields :func:`check_episodes` compares, from import lines."""
    return {str(line["id"]): {k: line[k] for k in EPISODE_FIELDS if k in line} for line in lines}
