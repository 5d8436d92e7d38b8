"""JSONL episodes: one object per line, ``{"id", "text", "speaker"?, "at"?, "session"?,
"metadata"?}``. ``at`` is ISO 8601.

Lines are decoded one by one, so a line of invalid UTF-8 or broken JSON is reported with
its number and does not stop the good lines around it from being imported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ALLOWED = {"id", "text", "speaker", "at", "occurred_at", "session", "metadata", "role"}


@dataclass
class BadLine:
    line: int
    reason: str


def read(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | BadLine]]:
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
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
    unknown = set(obj) - ALLOWED
    if unknown:
        return BadLine(number, f"unknown field(s) {sorted(unknown)}; allowed: {sorted(ALLOWED)}")
    if not isinstance(obj.get("text"), str):
        return BadLine(number, 'missing "text" (a string)')
    if "id" not in obj or not isinstance(obj["id"], str | int) or str(obj["id"]) == "":
        return BadLine(number, 'missing "id" (needed so that re-importing is idempotent)')
    item: dict[str, Any] = {"id": str(obj["id"]), "text": obj["text"]}
    for key in ("speaker", "session", "role"):
        if obj.get(key) is not None:
            item[key] = str(obj[key])
    when = obj.get("at", obj.get("occurred_at"))
    if when is not None:
        item["occurred_at"] = when
    if obj.get("metadata") is not None:
        if not isinstance(obj["metadata"], dict):
            return BadLine(number, '"metadata" must be an object')
        item["metadata"] = obj["metadata"]
    return item
