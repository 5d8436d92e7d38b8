"""Storage backends behind one interface. ``open_store`` picks one from a path or URL."""

from __future__ import annotations

from pathlib import Path

from memstrata.errors import ConfigError
from memstrata.store.base import AddReport, PreparedEpisode, SearchFilters, Store
from memstrata.store.sqlite import SQLiteStore


def open_store(path_or_url: str | Path) -> Store:
    """``sqlite:///path``, a plain file path, or ``:memory:``."""
    target = str(path_or_url)
    if target.startswith(("postgres://", "postgresql://")):
        raise ConfigError(
            "the PostgreSQL backend is not part of this release; use an SQLite path for now"
        )
    if target.startswith("sqlite:///"):
        target = target[len("sqlite:///") :]
    elif "://" in target:
        raise ConfigError(f"unsupported store URL {path_or_url!r}; use a file path or sqlite:///")
    if target != ":memory:":
        Path(target).expanduser().parent.mkdir(parents=True, exist_ok=True)
        target = str(Path(target).expanduser())
    return SQLiteStore(target)


__all__ = ["AddReport", "PreparedEpisode", "SQLiteStore", "SearchFilters", "Store", "open_store"]
