"""The layers of the package point one way, and no module imports itself back.

Every module under ``src/memstrata`` is read (nothing is imported), and each of its
imports is resolved to a module: at the top, under ``if TYPE_CHECKING:`` and inside
functions. Layers, lowest first (:data:`LAYERS`):

* ``core``: the records and errors everything shares, and small rules with no
  dependencies (plural wording, masking secrets, the BLAS thread count, package data);
* ``backends``: the store, the embedder, the LLM client and the parse. They know the core
  only, never each other, so each can be replaced or tested alone;
* ``knowledge``: what statements say (over the parse); ``retrieval``: System-1 and the
  primitives routes share; ``engine``: contracts, registry, fusion, builds; ``designs``;
* ``api``: the package's root, :mod:`memstrata.config` (it holds recipes, which are the
  engine's data), the memory classes and the modules they are made of, the importers;
* the applications over the API, lowest first: the service, the framework adapters (one
  reaches a served store through the service's client), the benchmarks (they drive both),
  the command line (it runs all of them).

A module may import its own layer and any layer below it. An import that points up is a
violation wherever it is, a lazy one included; a lazy import that points down is fine.
The backends, which share a layer, do not import each other (:data:`PEERS`). Cycles are
counted over the imports that run when a module loads (top-level ones): none may remain.
A ``TYPE_CHECKING`` import obeys the layers but may close a loop (a host class naming the
types of its parts, a part naming its host), since nothing runs it.

:data:`EXCEPTIONS` and :data:`CYCLES_LEFT` list what is known and not yet fixed, with why;
an entry that no longer matches anything fails the test, so the lists only shrink.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import NamedTuple

import memstrata

PKG = Path(memstrata.__file__).parent
SRC = PKG.parent

#: lowest first; a layer holds packages (a module's name, or the start of it)
LAYERS: list[tuple[str, list[str]]] = [
    (
        "core",
        [
            "memstrata.models",
            "memstrata.errors",
            "memstrata.wording",
            "memstrata.redact",
            "memstrata.blas",
            "memstrata.data",
        ],
    ),
    ("backends", ["memstrata.store", "memstrata.embed", "memstrata.llm", "memstrata.nlp"]),
    ("knowledge", ["memstrata.knowledge"]),
    ("retrieval", ["memstrata.retrieval"]),
    ("engine", ["memstrata.engine"]),
    ("designs", ["memstrata.designs"]),
    # one package: its modules import each other freely (cycles aside)
    ("api", ["memstrata"]),
    ("service", ["memstrata.service"]),
    ("integrations", ["memstrata.integrations"]),
    ("bench", ["memstrata.eval"]),
    ("cli", ["memstrata.cli", "memstrata.__main__"]),
]

#: layers whose packages may not import each other
PEERS = {"backends"}

#: the top-level modules of the API layer, named so that a new module is placed on purpose
API_MODULES = {
    "memstrata",
    "memstrata.building",
    "memstrata.config",
    "memstrata.copying",
    "memstrata.erasure",
    "memstrata.facade",
    "memstrata.factory",
    "memstrata.importers",
    "memstrata.ingest",
    "memstrata.inspection",
    "memstrata.jobs",
    "memstrata.keyring",
    "memstrata.listing",
    "memstrata.memory",
    "memstrata.opening",
    "memstrata.reading",
    "memstrata.runner",
    "memstrata.surfaces",
    "memstrata.updates",
    "memstrata.verbs",
}

#: (importer, imported) pairs that break the layers today, each to be fixed where it lives
EXCEPTIONS: dict[tuple[str, str], str] = {
    # the store records LLM calls with the LLM client's record type: the type belongs
    # in the core or the store
    ("memstrata.store.base", "memstrata.llm.types"): "LLMCallRecord lives in llm",
    ("memstrata.store.sql.usage", "memstrata.llm.types"): "LLMCallRecord lives in llm",
    # the embedding cache keys texts by their words and fills the store's vector table:
    # it sits above the embedder, not in it
    ("memstrata.embed.cache", "memstrata.retrieval.text"): "word keys live in retrieval",
    ("memstrata.embed.cache", "memstrata.store.base"): "the cache writes through the store",
    # the response cache forgets by content words (erasure): the word rule is retrieval's
    ("memstrata.llm.cache", "memstrata.retrieval.text"): "word keys live in retrieval",
    # the registry finds the built-in designs by importing the designs package's list
    ("memstrata.engine.registry", "memstrata.designs"): "built-in designs by import",
    # the engine's upkeep erases what a delete takes along with the API-level rule
    ("memstrata.engine.upkeep", "memstrata.erasure"): "erasure sits above the engine",
}

#: groups of modules that import each other at load time today, to be untangled
CYCLES_LEFT: list[set[str]] = []


class Import(NamedTuple):
    importer: str
    imported: str
    line: int
    when: str  # "load" (top level), "typing" (TYPE_CHECKING) or "lazy" (in a function)


def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    out: dict[str, Path] = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, known: dict[str, Path]) -> str:
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


class _Reader(ast.NodeVisitor):
    """The memstrata imports of one module, each with where it runs."""

    def __init__(self, name: str, is_package: bool, known: dict[str, Path]) -> None:
        self.name, self.package, self.known = name, is_package, known
        self.in_function = self.in_typing = 0
        self.found: list[Import] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.in_function += 1
        self.generic_visit(node)
        self.in_function -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        ):
            self.in_typing += 1
            for child in node.body:
                self.visit(child)
            self.in_typing -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def _add(self, target: str, node: ast.stmt) -> None:
        when = "lazy" if self.in_function else "typing" if self.in_typing else "load"
        found = Import(self.name, target, node.lineno, when)
        if target != self.name and found not in self.found:  # one per statement and module
            self.found.append(found)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] == "memstrata":
                self._add(_resolve(alias.name, self.known), node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            base = self.name.split(".")[: None if self.package else -1]
            base = base[: len(base) - node.level + 1]
            module = ".".join([*base, *([module] if module else [])])
        if module.split(".")[0] != "memstrata":
            return
        for alias in node.names:
            full = f"{module}.{alias.name}"
            self._add(full if full in self.known else _resolve(module, self.known), node)


@cache
def imports() -> tuple[Import, ...]:
    """Every memstrata import of every module, in module order."""
    known = modules()
    found: list[Import] = []
    for name, path in sorted(known.items()):
        reader = _Reader(name, path.name == "__init__.py", known)
        reader.visit(ast.parse(path.read_text(), str(path)))
        found += reader.found
    return tuple(found)


def place(module: str) -> tuple[int, str]:
    """The module's layer (index, lowest first) and the package that places it there."""
    if module in API_MODULES or any(
        module.startswith(m + ".") for m in API_MODULES - {"memstrata"}
    ):
        module = "memstrata"
    matches = [
        (len(package), index, package)
        for index, (_, packages) in enumerate(LAYERS)
        for package in packages
        if module == package or (package != "memstrata" and module.startswith(package + "."))
    ]
    if not matches:
        raise AssertionError(f"{module} has no layer: add it to LAYERS or API_MODULES")
    _, index, package = max(matches)
    return index, package


def violations(found: Iterable[Import]) -> list[Import]:
    """Imports that point up, or across to another package of the same layer."""
    bad = []
    for imp in found:
        (low, own), (high, other) = place(imp.importer), place(imp.imported)
        if high > low or (high == low and own != other and LAYERS[low][0] in PEERS):
            bad.append(imp)
    return bad


def cycles(found: Iterable[Import]) -> list[set[str]]:
    """Groups of modules that reach each other through load-time imports (Tarjan)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for imp in found:
        if imp.when == "load":
            graph[imp.importer].add(imp.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _show(imp: Import) -> str:
    return (
        f"{imp.importer}:{imp.line} ({place(imp.importer)[0]}) imports "
        f"{imp.imported} ({place(imp.imported)[0]}) [{imp.when}]"
    )


def test_every_module_has_a_layer() -> None:
    for module in modules():
        place(module)


def test_imports_point_down() -> None:
    found = imports()
    bad = violations(found)
    new = [imp for imp in bad if (imp.importer, imp.imported) not in EXCEPTIONS]
    stale = set(EXCEPTIONS) - {(imp.importer, imp.imported) for imp in bad}
    assert not new, "imports against the layers:\n" + "\n".join(map(_show, new))
    assert not stale, f"exceptions that no longer occur (remove them): {sorted(stale)}"


def test_no_import_cycles() -> None:
    found = imports()
    groups = cycles(found)
    new = [g for g in groups if g not in CYCLES_LEFT]
    stale = [g for g in CYCLES_LEFT if g not in groups]
    lines = [
        f"{imp.importer}:{imp.line} -> {imp.imported} [{imp.when}]"
        for group in new
        for imp in found
        if imp.when == "load" and imp.importer in group and imp.imported in group
    ]
    assert not new, "import cycles:\n" + "\n".join(lines)
    assert not stale, f"cycles that no longer occur (remove them): {stale}"


def test_the_checker_sees_lazy_and_typing_imports() -> None:
    by_when = {imp.when for imp in imports()}
    assert by_when == {"load", "typing", "lazy"}
    assert place("memstrata.store.sqlite")[0] < place("memstrata.engine.engine")[0]
    assert place("memstrata.config") == place("memstrata.memory")
