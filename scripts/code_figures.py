"""Figures of the source's shape: functions over a length, and the most complex ones.

``python scripts/code_figures.py [src/memstrata] [--lines 80] [--top 5]`` prints the
number of functions (methods and nested functions included) longer than ``--lines``
lines, from ``def`` to the last line of the body, and the functions with the largest
cyclomatic complexity: 1, plus 1 for each ``if``/``elif``, conditional expression,
loop, ``except``, ``case``, ``assert``, comprehension clause (``for`` and ``if``) and
each extra operand of ``and``/``or``. A nested function is counted on its own, not in
the function around it. Reads the files only (``ast``); nothing is imported.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

Function = ast.FunctionDef | ast.AsyncFunctionDef
BRANCHES = (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler)
BRANCHES_TOO = (ast.Assert, ast.match_case)


class Figure(NamedTuple):
    where: str
    lines: int
    complexity: int


def complexity(function: Function) -> int:
    """McCabe's number of the function's own body (nested functions and classes apart)."""
    count = 1
    stack: list[ast.AST] = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, BRANCHES + BRANCHES_TOO):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            count += 1 + len(node.ifs)
        stack.extend(ast.iter_child_nodes(node))
    return count


def figures(root: Path) -> Iterator[Figure]:
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                where = f"{path.relative_to(root.parent)}:{node.lineno} {node.name}"
                yield Figure(where, lines, complexity(node))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default="src/memstrata", type=Path)
    parser.add_argument("--lines", type=int, default=80, help="the length counted as long")
    parser.add_argument("--top", type=int, default=5, help="how many complex ones to list")
    args = parser.parse_args()
    found = list(figures(args.root))
    long = [f for f in found if f.lines > args.lines]
    print(f"functions: {len(found)}; over {args.lines} lines: {len(long)}")
    for f in sorted(found, key=lambda f: -f.complexity)[: args.top]:
        print(f"complexity {f.complexity:3d}  {f.lines:4d} lines  {f.where}")


if __name__ == "__main__":
    main()
