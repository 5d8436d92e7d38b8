"""Where the fault and concurrency benches keep their stores, so the same runs and checks
work on SQLite and on PostgreSQL: a folder of SQLite files, or databases on one
PostgreSQL server (a fresh one per run, copied from a template with ``CREATE DATABASE …
TEMPLATE`` the way a SQLite template is copied as a file).

A store's location is what ``--db`` takes (a path or a URL). :class:`Probe` reads counts
from a store another process is writing, through a connection of its own.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from memstrata.store import is_postgres

#: the SQL of the probes, in the SQLite placeholder style (PostgreSQL's is swapped in)
EPISODES = "SELECT COUNT(*) FROM episodes e JOIN namespaces n ON n.id=e.namespace_id WHERE n.name=?"
DONE = (
    "SELECT COUNT(*) FROM build_progress b JOIN namespaces n ON n.id=b.namespace_id "
    "WHERE n.name=? AND b.builder=? AND b.status='done'"
)
REPAIRS = "SELECT COUNT(*) FROM repairs"
HAS_TEXT = (
    "SELECT COUNT(*) FROM episodes e JOIN namespaces n ON n.id=e.namespace_id "
    "WHERE n.name=? AND e.external_id=? AND e.text=?"
)


class Probe:
    """Read-only counts from a store another process writes (SQLite WAL readers and
    PostgreSQL readers never block the writer); 0 while the store or its tables do not
    exist yet, or cannot be read at that moment."""

    def __init__(self, location: str | Path, namespace: str = "faults") -> None:
        self.location = str(location)
        self.namespace = namespace
        self._pg: Any = None  # a PostgreSQL connection, kept between polls

    def _one(self, sql: str, *args: Any) -> int:
        if is_postgres(self.location):
            return self._pg_one(sql.replace("?", "%s"), args)
        if not Path(self.location).exists():
            return 0
        try:
            conn = sqlite3.connect(f"file:{self.location}?mode=ro", uri=True, timeout=1)
            try:
                row = conn.execute(sql, args).fetchone()
            finally:
                conn.close()
        except sqlite3.Error:
            return 0
        return int(row[0]) if row and row[0] is not None else 0

    def _pg_one(self, sql: str, args: tuple[Any, ...]) -> int:
        import psycopg

        try:
            if self._pg is None or self._pg.closed:
                self._pg = psycopg.connect(self.location, autocommit=True, connect_timeout=5)
            row = self._pg.execute(sql, args).fetchone()
        except psycopg.Error:
            self.close()
            return 0
        return int(row[0]) if row and row[0] is not None else 0

    def close(self) -> None:
        if self._pg is not None:
            self._pg.close()
            self._pg = None

    def episodes(self) -> int:
        return self._one(EPISODES, self.namespace)

    def done(self, builder: str) -> int:
        return self._one(DONE, self.namespace, builder)

    def repairs(self) -> int:
        return self._one(REPAIRS)

    def has_text(self, episode: str, text: str) -> int:
        return self._one(HAS_TEXT, self.namespace, episode, text)


class Site(Protocol):
    """Makes the stores of one bench run, and cleans them up."""

    kind: str

    def new(self, name: str, template: str | None = None) -> str:
        """The location of a new store (empty, or a copy of ``template``)."""
        ...

    def close(self) -> None:
        """Remove what :meth:`new` made, unless it is to be kept."""
        ...


class SQLiteSite:
    """SQLite files in a folder; a template is copied with its write-ahead log."""

    kind = "sqlite"

    def __init__(self, folder: Path) -> None:
        self.dir = Path(folder)
        self.dir.mkdir(parents=True, exist_ok=True)

    def new(self, name: str, template: str | None = None) -> str:
        db = self.dir / f"{name}.db"
        if template is not None:
            for suffix in ("", "-wal"):
                src = Path(f"{template}{suffix}")
                if src.exists():
                    shutil.copy(src, f"{db}{suffix}")
        return str(db)

    def close(self) -> None:
        """The files stay with the run's logs (the caller's folder decides their fate)."""


class PostgresSite:
    """Databases on one PostgreSQL server, named ``PREFIX_NAME``; ``admin_url`` is any
    database of it (``postgres``) and its user must be allowed to create databases."""

    kind = "postgres"

    def __init__(self, admin_url: str, *, prefix: str = "bench", keep: bool = False) -> None:
        self.admin_url = admin_url
        self.prefix = re.sub(r"\W", "_", prefix.lower())
        self.keep = keep
        self.made: list[str] = []

    def _db(self, location: str) -> str:
        return location.rsplit("/", 1)[1].split("?", 1)[0]

    def url(self, database: str) -> str:
        base, _, rest = self.admin_url.rpartition("/")
        query = rest.partition("?")[2]
        return f"{base}/{database}" + (f"?{query}" if query else "")

    def new(self, name: str, template: str | None = None) -> str:
        import psycopg

        db = f"{self.prefix}_{re.sub(r'[^a-z0-9]', '_', name.lower())}"[:63]
        source = f" TEMPLATE {self._db(template)}" if template is not None else ""
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {db}{source}")
        self.made.append(db)
        return self.url(db)

    def close(self) -> None:
        if self.keep or not self.made:
            return
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            for db in self.made:
                conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
        self.made.clear()


@contextmanager
def local_postgres(folder: Path | None = None) -> Iterator[str]:
    """A PostgreSQL server of this machine's for one run (``memstrata.store.postgres.
    server``), in ``folder`` or a temporary one; yields the URL of its ``postgres``
    database and stops it afterwards."""
    from memstrata.store.postgres import server

    own = folder is None
    where = Path(tempfile.mkdtemp(prefix="memstrata-bench-pg-")) if folder is None else folder
    local = server.start(where)
    try:
        yield local.url("postgres")
    finally:
        server.stop(where)
        if own:
            shutil.rmtree(where, ignore_errors=True)


@contextmanager
def open_site(
    store: str, workdir: Path, *, db: str | None = None, keep: bool = False
) -> Iterator[Site]:
    """The site of ``--store sqlite|postgres`` or ``--db URL`` (a server to use)."""
    if db is not None and is_postgres(db):
        site: Site = PostgresSite(db, keep=keep)
        try:
            yield site
        finally:
            site.close()
    elif store == "postgres":
        with local_postgres(workdir / "pg" if keep else None) as url:
            yield PostgresSite(url, keep=keep)
    elif store == "sqlite":
        yield SQLiteSite(workdir)
    else:
        raise ValueError(f"unknown store {store!r}: sqlite or postgres")
