"""``memstrata serve``: the REST service over one store."""

from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

from memstrata.cli.common import ConfigOpt, app, err, errors, fail, load_config


@app.command("serve")
def serve(
    db: Annotated[str, typer.Option("--db", help="The store to serve (created if absent).")],
    host: Annotated[
        str, typer.Option(help="Interface to bind: loopback only until API keys exist.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", min=0, max=65535)] = 8765,
    workers: Annotated[
        int,
        typer.Option(
            help="Build workers in this process: 1, or 0 when `memstrata worker` processes "
            "build the store apart.",
            min=0,
            max=1,
        ),
    ] = 1,
    config: ConfigOpt = None,
) -> None:
    """Serve a store over HTTP: the REST API under /v1 (OpenAPI at /openapi.json,
    interactive docs at /docs).

    Adds return as soon as the episodes are committed (searchable at once); the recipe's
    structures are built by the worker in the background (`build.mode = "queue"`).
    Errors are JSON {"error": {"code", "message"}} with their HTTP status.

    Without API keys the service is open, so it binds to a loopback address only."""
    if not _loopback(host):
        fail(
            f"refusing to serve on {host!r}: without API keys the service is open to anyone "
            "who reaches it; bind to 127.0.0.1 (or ::1) and put an authenticating proxy in "
            "front",
            "invalid_input",
        )
        raise typer.Exit(2)
    with errors():
        import uvicorn

        from memstrata.service import create_app

        cfg = load_config(config, store=db, **{"build.mode": "queue"})
        err.print(
            f"serving {db} on http://{host}:{port}/v1 (docs: /docs); open to local clients: "
            "no API keys",
            markup=False,
        )
        uvicorn.run(create_app(cfg, workers=workers), host=host, port=port, log_level="info")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
