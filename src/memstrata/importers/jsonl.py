"""JSONL episodes: one object per line, ``{"id", "text", "speaker"?, "at"?, "session"?,
"metadata"?}``. ``at`` is ISO 8601.

Lines are decoded one by one, so a line of invalid UTF-8 or broken JSON is reported with
its number and does not stop the good lines around it from being imported. Which keys a
line may hold, and what their values must be, is decided where ``add_many`` decides it
(:func:`memstrata.ingest.prepare_episode`), so a line is read the same either way and a
bad value is reported under the key the line wrote.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class BadLine:
    line: int
    reason: str


BOM = b"\xef\xbb\xbf"


def read(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | BadLine]]:
    """Each non-blank line, parsed. A UTF-8 byte-order mark opening the file (as some
    editors on Windows write one) is not part of the first line."""
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if number == 1:
                raw = raw.removeprefix(BOM)
            if not raw.strip():
                continue
            yield number, parse_line(raw, number)


def parse_line(raw: bytes, number: int) -> dict[str, Any] | BadLine:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return BadLine(number, f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start})")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return BadLine(number, f"invalid JSON: {exc.msg} at column {exc.colno}")
    if not isinstance(obj, dict):
        return BadLine(number, "expected a JSON object")
    if not isinstance(obj.get("text"), str):
        return BadLine(number, 'missing "text" (a string)')
    if "id" not in obj or not isinstance(obj["id"], str | int) or str(obj["id"]) == "":
        return BadLine(number, 'missing "id" (needed so that re-importing is idempotent)')
    # Names and labels written as numbers are kept as text; everything else, unknown keys
    # included, goes on as written, to be checked by prepare_episode.
    item: dict[str, Any] = {k: v for k, v in obj.items() if v is not None}
    item["id"] = str(obj["id"])
    for key in ("speaker", "session", "role"):
        if isinstance(item.get(key), int | float):
            item[key] = str(item[key])
    if "metadata" in item and not isinstance(item["metadata"], dict):
        return BadLine(number, '"metadata" must be an object')
    return item
