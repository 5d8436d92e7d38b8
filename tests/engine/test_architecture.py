"""The layout rules the engine relies on, checked on the source: the API, the CLI, the
engine and the benchmarks name no design, and no design imports another one."""

from __future__ import annotations

import ast
from pathlib import Path

import memstrata

PKG = Path(memstrata.__file__).parent
DESIGNS = sorted(p.name for p in (PKG / "designs").iterdir() if (p / "__init__.py").exists())


def imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_there_are_designs_to_check() -> None:
    assert {"mnemis", "system1"} <= set(DESIGNS)


def test_generic_code_names_no_design() -> None:
    """Reading the list of built-ins (``memstrata.designs.BUILTIN``) is allowed."""
    generic = [PKG / "memory.py", PKG / "facade.py", PKG / "models.py"]
    for folder in ("cli", "engine", "eval", "store", "retrieval", "llm", "embed", "service"):
        generic += sorted((PKG / folder).rglob("*.py"))
    for path in generic:
        named = {m for m in imports(path) if m.split(".")[1:3] in [["designs", d] for d in DESIGNS]}
        assert not named, f"{path.relative_to(PKG)} imports {sorted(named)}"


def test_the_store_and_the_core_models_name_no_design_kind() -> None:
    """A design's record kinds are its own: no string of the store's or the core models'
    code names one (they read any kind through ``record_kind``)."""
    from memstrata.engine.registry import Registry, _builtin_designs

    kinds = set(Registry(_builtin_designs()).kinds)
    assert {"tree_node", "category", "thesis"} <= kinds
    for path in [PKG / "models.py", *sorted((PKG / "store").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named = {k for k in kinds if f"'{k}'" in node.value or node.value == k}
                assert not named, f"{path.relative_to(PKG)} names the kind(s) {sorted(named)}"


def test_no_design_imports_another() -> None:
    for design in DESIGNS:
        for path in sorted((PKG / "designs" / design).rglob("*.py")):
            for module in imports(path):
                parts = module.split(".")
                if parts[:2] == ["memstrata", "designs"] and len(parts) > 2:
                    assert parts[2] == design, f"{path.relative_to(PKG)} imports {module}"


def test_no_module_over_600_lines_and_a_small_api_module() -> None:
    sizes = {p: len(p.read_text().splitlines()) for p in PKG.rglob("*.py")}
    assert not {str(p.relative_to(PKG)): n for p, n in sizes.items() if n > 600}
    assert sizes[PKG / "memory.py"] < 350
