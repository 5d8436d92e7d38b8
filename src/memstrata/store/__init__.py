"""Storage backends behind one interface. ``open_store`` picks one from a path or URL."""

from __future__ import annotations

from pathlib import Path

from memstrata.errors import ConfigError, StoreError, StoreNotFoundError
from memstrata.redact import redact
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


def open_store(
    path_or_url: str | Path,
    *,
    create: bool = True,
    ann_threshold: int | None = None,
    text_threshold: int | None = None,
    build_on_search: bool = True,
) -> Store:
    """``sqlite:///path``, a plain file path, ``:memory:``, or a PostgreSQL URL
    (``postgresql://`` or ``postgres://``: the database must exist; its schema is made on
    first open).

    ``create=False`` opens only an existing SQLite store: a missing file raises
    :class:`StoreNotFoundError` and nothing is created, neither the file nor its folders.
    The index options are the SQLite store's (``[indexes]`` of the configuration);
    PostgreSQL keeps its indexes itself.
    """
    target = store_target(path_or_url, create=create)
    if is_postgres(target):
        try:
            from memstrata.store.postgres import PostgresStore
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] != "psycopg":
                raise
            raise StoreError(
                "a PostgreSQL store needs psycopg: pip install 'memstrata[postgres]'"
            ) from exc

        return PostgresStore(target)
    return SQLiteStore(
        target,
        ann_threshold=ann_threshold,
        text_threshold=text_threshold,
        build_on_search=build_on_search,
    )


def is_postgres(path_or_url: str | Path) -> bool:
    return str(path_or_url).startswith(("postgres://", "postgresql://"))


def store_target(path_or_url: str | Path, *, create: bool = True) -> str:
    """What :func:`open_store` opens: the SQLite path (or ``:memory:``) of a path or URL,
    or a PostgreSQL URL as it is (whether that database exists is known on opening).

    With ``create`` the file's folders are made; without it a missing file raises
    :class:`StoreNotFoundError`. Lets a caller check a store exists before opening it.
    """
    target = str(path_or_url)
    if is_postgres(target):
        return target
    if target.startswith("sqlite:///"):
        target = target[len("sqlite:///") :]
    elif "://" in target:
        shown = redact(str(path_or_url))
        raise ConfigError(f"unsupported store URL {shown!r}; use a file path or sqlite:///")
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
    "is_postgres",
    "open_store",
]
