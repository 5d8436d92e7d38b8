"""Storage backends behind one interface. ``open_store`` picks one from a path or URL."""

from __future__ import annotations

from pathlib import Path

from memstrata.errors import ConfigError, StoreNotFoundError
from memstrata.store.base import (
    AddReport,
    DeleteReport,
    EpisodeVersion,
    PreparedEpisode,
    SearchFilters,
    Store,
    UpdateReport,
)
from memstrata.store.sqlite import SQLiteStore


def open_store(path_or_url: str | Path, *, create: bool = True) -> Store:
    """``sqlite:///path``, a plain file path, or ``:memory:``.

    ``create=False`` opens only an existing store: a missing file raises
    :class:`StoreNotFoundError` and nothing is created, neither the file nor its folders.
    """
    return SQLiteStore(store_target(path_or_url, create=create))


def store_target(path_or_url: str | Path, *, create: bool = True) -> str:
    """What :func:`open_store` opens: the SQLite path (or ``:memory:``) of a path or URL.

    With ``create`` the file's folders are made; without it a missing file raises
    :class:`StoreNotFoundError`. Lets a caller check a store exists before opening it.
    """
    target = str(path_or_url)
    if target.startswith(("postgres://", "postgresql://")):
        raise ConfigError(
            "the PostgreSQL backend is not part of this release; use an SQLite path for now"
        )
    if target.startswith("sqlite:///"):
        target = target[len("sqlite:///") :]
    elif "://" in target:
        raise ConfigError(f"unsupported store URL {path_or_url!r}; use a file path or sqlite:///")
    if target == ":memory:":
        return target
    path = Path(target).expanduser()
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    elif not path.exists():
        raise StoreNotFoundError(str(path))
    return str(path)


__all__ = [
    "AddReport",
    "DeleteReport",
    "EpisodeVersion",
    "PreparedEpisode",
    "SQLiteStore",
    "SearchFilters",
    "Store",
    "UpdateReport",
    "open_store",
]
