"""What differs between the SQL backends in the statements the shared rules run.

The rules (``store/sql/*``) write their SQL once, with ``?`` for parameters, and ask the
backend's :class:`Dialect` for the few spellings that differ: the parameter marker, how a
list is bound, byte-order collation, the row order of first insertion, a row lock, a
flag's sum and a number inside a JSON text. The snapshot a read runs in and the error
type are the backend's own (its host class, see :mod:`.host`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class Dialect:
    name: str
    #: the driver's parameter marker (``?`` is written in the rules)
    marker: str = "?"
    #: values bound per ``IN (...)`` list; 0 binds the whole list as one array parameter
    list_chunk: int = 0
    #: appended to an ORDER BY term that must sort by bytes whatever the server's locale
    bytewise: str = ""
    #: the column that orders records as first written
    record_order: str = "rowid"
    #: appended to a SELECT that must hold its rows until the transaction ends
    for_update: str = ""
    #: a text parameter that may be NULL (PostgreSQL must be told its type)
    text_param: str = "?"
    #: the statement that defers link checks to the end of a write (links may name
    #: records later in the same batch); empty where the constraints are deferred already
    defer_links: str = ""

    def sql(self, text: str) -> str:
        """``text`` with ``?`` as this driver's marker."""
        return _translate(text, self.marker)

    def in_list(self, values: Sequence[Any]) -> Iterator[tuple[str, tuple[Any, ...]]]:
        """``(fragment, parameters)`` pairs that test a column against ``values``: one
        ``= ANY(?)`` with an array, or ``IN (?,...)`` per chunk the driver takes (none for
        an empty list, which matches nothing either way)."""
        items = list(values)
        if not self.list_chunk:
            yield "= ANY(?)", (items,)
            return
        for start in range(0, len(items), self.list_chunk):
            chunk = items[start : start + self.list_chunk]
            yield f"IN ({','.join('?' * len(chunk))})", tuple(chunk)

    def in_all(self, values: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
        """One test against a short list (a filter's speakers), never split in chunks."""
        if not self.list_chunk:
            return "= ANY(?)", (list(values),)
        return f"IN ({','.join('?' * len(values))})", tuple(values)

    def contains_any(self, column: str, words: Sequence[str]) -> tuple[str, tuple[Any, ...]]:
        """`` AND ...`` and its parameters: ``column``, lower-cased, holds one of ``words``
        (lower-case letters and digits, see ``erasing.probe_words``)."""
        if self.name == "sqlite":
            tests = " OR ".join(["instr(lower(" + column + "), ?) > 0"] * len(words))
            return f" AND ({tests})", tuple(words)
        return f" AND lower({column}) LIKE ANY(?)", ([f"%{_like(w)}%" for w in words],)

    def flag_sum(self, condition: str) -> str:
        """How many rows meet ``condition``."""
        return f"SUM({condition})" if self.name == "sqlite" else f"sum(({condition})::int)"

    def json_int(self, column: str, key: str) -> str:
        """The integer at ``key`` of the JSON text in ``column`` (NULL if absent)."""
        if self.name == "sqlite":
            return f"json_extract({column}, '$.{key}')"
        return f"({column}::json->>'{key}')::int"


def _like(word: str) -> str:
    """``word`` as a literal inside a LIKE pattern."""
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@lru_cache(maxsize=1024)
def _translate(text: str, marker: str) -> str:
    if marker == "?":
        return text
    return text.replace("%", "%%").replace("?", marker)


SQLITE = Dialect("sqlite", list_chunk=500, defer_links="PRAGMA defer_foreign_keys=ON")
POSTGRES = Dialect(
    "postgresql",
    marker="%s",
    bytewise=' COLLATE "C"',
    record_order="ord",
    for_update=" FOR UPDATE",
    text_param="?::text",
)
