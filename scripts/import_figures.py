"""What ``import memstrata`` costs and loads.

``python scripts/import_figures.py [--runs 5] [--module memstrata]`` runs
``python -X importtime -c "import memstrata"`` in fresh processes with this interpreter
and prints the median of the module's cumulative import time, and which of the
packages a user may not need were loaded: psycopg, fastapi, matplotlib, mcp, any design
(``memstrata.designs.<name>``), any ``memstrata.eval`` module. Run it from the
repository's root with ``PYTHONPATH=src`` to measure a working tree.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

WATCHED = ("psycopg", "fastapi", "matplotlib", "mcp")


def run(module: str) -> tuple[int, set[str]]:
    """One fresh import: its cumulative microseconds and the modules it loaded."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    )
    total, loaded = 0, set()
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = (part.strip() for part in line.split(":", 1)[1].split("|"))
        if not cumulative.isdigit():
            continue  # the header
        loaded.add(name)
        if name == module:
            total = int(cumulative)
    return total, loaded


def watched(loaded: set[str]) -> list[str]:
    found = sorted({name for name in loaded if name.split(".")[0] in WATCHED})
    tops = sorted({name.split(".")[0] for name in found})
    designs = sorted(
        {".".join(n.split(".")[:3]) for n in loaded if n.startswith("memstrata.designs.")}
    )
    lab = sorted(n for n in loaded if n == "memstrata.eval" or n.startswith("memstrata.eval."))
    return tops + designs + lab


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--module", default="memstrata")
    args = parser.parse_args()
    results = [run(args.module) for _ in range(args.runs)]
    times = [total for total, _ in results]
    print(
        f"import {args.module}: median {statistics.median(times) / 1000:.0f} ms of "
        f"{args.runs} runs ({', '.join(f'{t / 1000:.0f}' for t in times)} ms)"
    )
    print("loaded:", ", ".join(watched(results[-1][1])) or "none of the watched")


if __name__ == "__main__":
    main()
