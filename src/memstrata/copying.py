"""Moving a store between backends (``memstrata copy``): SQLite to PostgreSQL, back, or
SQLite to SQLite, with everything in it.

Order: the embedding cache first (idempotent), then each namespace as one transaction of
the target (:meth:`Store.import_namespace`), then what belongs to no namespace (API keys,
unattributed LLM calls; idempotent). A copy stopped anywhere therefore leaves whole
namespaces and never part of one; ``resume`` skips those the target already holds with
exactly the source's content. Verification compares each namespace's dump on both sides
(counts first, then every row) and runs the same System-1 searches on both.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from memstrata.config import Config
from memstrata.embed import Embedder
from memstrata.errors import InvalidInputError
from memstrata.retrieval import documents
from memstrata.store import Store
from memstrata.store.dump import NamespaceDump
from memstrata.store.erasing import UNKNOWN_WORDS
from memstrata.wording import plural

EMBEDDING_BATCH = 2000
#: searches per namespace in a verification, and the recipe they run (deterministic)
QUERIES = 8
VERIFY_RECIPE = "default"


class CopyRefused(InvalidInputError):
    """The target holds a namespace of the source (nothing was copied)."""


@dataclass
class CopyReport:
    namespaces: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # already there, same content (resume)
    episodes: int = 0
    records: int = 0
    embeddings: int = 0
    keys: int = 0
    calls: int = 0
    seconds: float = 0.0


def plan(
    source: Store, target: Store, names: Sequence[str] | None, *, resume: bool = False
) -> tuple[list[str], list[str]]:
    """(namespaces to copy, namespaces to skip), or :class:`CopyRefused` naming those the
    target holds already (with ``resume``: those it holds with other content)."""
    known = source.namespaces()
    chosen = known if names is None else list(dict.fromkeys(names))
    missing = [n for n in chosen if n not in known]
    if missing:
        raise InvalidInputError(f"the source has no namespace {', '.join(map(repr, missing))}")
    held = [n for n in chosen if target.has_namespace(n)]
    same = [n for n in held if resume and not dump_differences(source, target, n)]
    clash = [n for n in held if n not in same]
    if clash:
        what = "with other content " if resume else ""
        raise CopyRefused(
            f"the target already holds {plural(len(clash), 'namespace')} of the source {what}"
            f"({', '.join(map(repr, clash[:5]))}{', ...' if len(clash) > 5 else ''}); nothing "
            "was copied. Copy into a store without them, pick others with --namespace, "
            "delete them from the target first, or add --resume after a stopped copy"
        )
    return [n for n in chosen if n not in same], same


def copy_store(
    source: Store,
    target: Store,
    names: Sequence[str],
    *,
    with_globals: bool = True,
    on_namespace: Callable[[str, NamespaceDump, float], None] | None = None,
) -> CopyReport:
    """Copy the embedding cache, ``names`` (one transaction each) and, ``with_globals``,
    the API keys and the LLM calls of no namespace. Call :func:`plan` first."""
    started = time.perf_counter()
    report = CopyReport()
    after: tuple[str, bytes] | None = None
    while batch := source.iter_embeddings(after, EMBEDDING_BATCH):
        by_model: dict[str, list[Any]] = {}
        for model, digest, vector in batch:
            by_model.setdefault(model, []).append((digest, vector))
        for model, items in by_model.items():
            # what text a vector was made from is not copied: the next delete takes it,
            # unless an episode points to it (docs/engine.md, "Deleted means gone")
            unknown = {digest: (UNKNOWN_WORDS,) for digest, _ in items}
            target.put_embeddings(model, items, unknown)
        report.embeddings += len(batch)
        after = (batch[-1][0], batch[-1][1])
    for name in names:
        began = time.perf_counter()
        dump = source.export_namespace(name)
        for ep in dump.episodes:
            meta = json.loads(ep.metadata) if ep.metadata else {}
            ep.index_text = documents.index_text(ep.text, ep.speaker, meta)
        target.import_namespace(dump)
        report.namespaces.append(name)
        report.episodes += len(dump.episodes)
        report.records += len(dump.records)
        if on_namespace is not None:
            on_namespace(name, dump, time.perf_counter() - began)
    if with_globals:
        report.keys, report.calls = target.import_globals(source.export_globals())
    report.seconds = time.perf_counter() - started
    return report


def dump_differences(source: Store, target: Store, name: str) -> list[str]:
    """How the namespace differs between the stores: counts that differ, else the first
    row that differs in each table; empty when they hold the same."""
    if not target.has_namespace(name):
        return [f"{name}: not in the target"]
    a, b = source.export_namespace(name), target.export_namespace(name)
    counts_a, counts_b = a.counts(), b.counts()
    out = [
        f"{name}: {what} {counts_a[what]} in the source, {counts_b[what]} in the target"
        for what in counts_a
        if counts_a[what] != counts_b[what]
    ]
    if out:
        return out
    for f in fields(NamespaceDump):
        rows_a, rows_b = getattr(a, f.name), getattr(b, f.name)
        if rows_a != rows_b:
            if isinstance(rows_a, list):
                at = next(i for i, (x, y) in enumerate(zip(rows_a, rows_b, strict=True)) if x != y)
                out.append(f"{name}: {f.name} row {at} differs: {rows_a[at]!r} / {rows_b[at]!r}")
            else:
                out.append(f"{name}: {f.name} differs: {rows_a!r} / {rows_b!r}")
    return out


def global_differences(source: Store, target: Store) -> list[str]:
    """API keys and embeddings of the source that the target lacks."""
    out = []
    keys_a, keys_b = source.export_globals().keys, target.export_globals().keys
    lacking = [k.prefix for k in keys_a if k not in keys_b]
    if lacking:
        out.append(f"API keys missing (or changed) in the target: {', '.join(lacking[:5])}")
    vectors = 0
    after: tuple[str, bytes] | None = None
    there: set[tuple[str, bytes]] = set()
    while batch := target.iter_embeddings(after, EMBEDDING_BATCH):
        there.update((m, h) for m, h, _ in batch)
        after = (batch[-1][0], batch[-1][1])
    after = None
    while batch := source.iter_embeddings(after, EMBEDDING_BATCH):
        vectors += sum((m, h) not in there for m, h, _ in batch)
        after = (batch[-1][0], batch[-1][1])
    if vectors:
        are = "is" if vectors == 1 else "are"
        out.append(f"{plural(vectors, 'cached embedding')} of the source {are} not in the target")
    return out


def verification_queries(dump: NamespaceDump, n: int = QUERIES) -> list[str]:
    """``n`` queries drawn from the stored text: the first words of episodes spread evenly
    over the namespace (so the same dump always gives the same queries)."""
    eps = [e for e in dump.episodes if e.text.strip()]
    if not eps:
        return []
    picks = sorted({round(i * (len(eps) - 1) / max(n - 1, 1)) for i in range(n)})
    return [" ".join(eps[i].text.split()[:8]) for i in picks]


async def search_differences(
    source: Store, target: Store, names: Sequence[str], config: Config, embedder: Embedder
) -> tuple[int, list[str]]:
    """Run the same System-1 searches (k = 10) on both stores; (searches run, the ones
    whose ranked episode ids differ)."""
    from memstrata.memory import AsyncMemory

    mem_a, mem_b = AsyncMemory(config, source, embedder), AsyncMemory(config, target, embedder)
    runs, out = 0, []
    for name in names:
        queries = verification_queries(source.export_namespace(name))
        if not queries:
            continue
        found = []
        for mem in (mem_a, mem_b):
            results = await mem.search_many(
                queries, namespace=name, k=10, recipe=VERIFY_RECIPE, max_tokens=None
            )
            found.append([[h.id for h in r.hits if h.kind == "episode"] for r in results])
        runs += len(queries)
        for q, ids_a, ids_b in zip(queries, found[0], found[1], strict=True):
            if ids_a != ids_b:
                out.append(
                    f"{name}: search {q!r} ranks {ids_a} in the source, {ids_b} in the target"
                )
    return runs, out
