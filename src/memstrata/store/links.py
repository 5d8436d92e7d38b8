"""The many-to-many links a record kind declares (``Derived.link_fields``), as both
stores keep them: a ``record_links`` row per (record, child), and, when a linked record
goes, its id dropped from the JSON lists on both sides so no reader meets a dangling id."""

from __future__ import annotations

import json

from memstrata.models import Derived, record_kind


def children(record: Derived) -> list[str]:
    """The ids a record links to as their parent (none for a kind without links)."""
    fields = type(record).link_fields
    return [] if fields is None else list(getattr(record, fields[0]))


def without(kind: str, data: str, gone: set[str]) -> str | None:
    """A linked record's JSON with the ids of ``gone`` dropped from its link fields; None
    when its kind declares no links or nothing changes."""
    cls = record_kind(kind)
    if cls is None or cls.link_fields is None:
        return None
    fields = json.loads(data)
    before = {key: fields.get(key, []) for key in cls.link_fields}
    for key, ids in before.items():
        fields[key] = [i for i in ids if i not in gone]
    if all(fields[key] == ids for key, ids in before.items()):
        return None
    return json.dumps(fields)


__all__ = ["children", "without"]
