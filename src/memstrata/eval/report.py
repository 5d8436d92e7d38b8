"""Benchmarks write what they print: a JSON report and its Markdown table."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_report(
    report: dict[str, Any],
    out_dir: str | Path,
    name: str,
    markdown: Callable[[dict[str, Any]], str],
) -> tuple[Path, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jpath, mpath = out / f"{name}.json", out / f"{name}.md"
    jpath.write_text(json.dumps(report, indent=2))
    mpath.write_text(markdown(report))
    return jpath, mpath
