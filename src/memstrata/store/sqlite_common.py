"""Small helpers of the SQLite store's modules (kept apart to avoid import cycles); the
backend-neutral ones are in ``store/sql/common.py``."""

from __future__ import annotations

import sqlite3

from memstrata.errors import StoreClosedError, StoreError, StoreLockedError


def _fts(ns_id: int) -> str:
    """Name of a namespace's full-text table (an integer id, so safe to splice into SQL)."""
    return f"fts_{int(ns_id)}"


def _split_sql(script: str) -> list[str]:
    """Statements of a migration file, a trigger's body (``BEGIN ...; END;``) kept whole."""
    out: list[str] = []
    buffer = ""
    for line in script.splitlines():
        if line.strip().startswith("--"):
            continue
        buffer += line + "\n"
        if sqlite3.complete_statement(buffer):
            out.append(buffer.strip().rstrip(";").strip())
            buffer = ""
    if buffer.strip():
        out.append(buffer.strip())
    return [s for s in out if s]


def _rewrite_fts(conn: sqlite3.Connection, ns_id: int) -> None:
    """Merge the namespace's FTS5 index into one new segment. A delete only adds a
    tombstone: the removed terms stay in older segments until a merge rewrites them, and
    SQLite 3.40 (Debian 12's, this project's floor) predates FTS5's ``secure-delete``.
    Costs a rewrite of the namespace's index (docs/benchmarks.md, "Delete")."""
    conn.execute(f"INSERT INTO {_fts(ns_id)}({_fts(ns_id)}) VALUES ('optimize')")


def translate(exc: sqlite3.Error, path: str) -> StoreError:
    """SQLite's errors in words a user can act on."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        return StoreLockedError(
            f"{path} stayed locked by another process for longer than the busy timeout; "
            "retry when it is done, or raise the timeout"
        )
    if isinstance(exc, sqlite3.ProgrammingError) and "closed" in text:
        return StoreClosedError(path)
    if isinstance(exc, sqlite3.IntegrityError):
        return StoreError(f"{path}: write refused by a consistency rule ({text})")
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return StoreError(
            f"{path} is not a memstrata database or is corrupt ({text}); "
            "restore it from a backup or choose another path"
        )
    return StoreError(f"{path}: {text}")
