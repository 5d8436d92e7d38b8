"""``memstrata serve``: the REST service over one store."""

from __future__ import annotations

import errno
import json
import socket
from pathlib import Path
from typing import Annotated

import typer

from memstrata.cli.common import ConfigOpt, app, err, errors, fail, load_config
from memstrata.redact import redact


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
            help="Build workers in this process (several drain different namespaces at "
            "once); 0 when `memstrata worker` processes build the store apart.",
            min=0,
            max=64,
        ),
    ] = 1,
    max_inflight: Annotated[
        int,
        typer.Option(
            help="Requests handled at once; past it the service answers 429 with "
            "Retry-After instead of queueing.",
            min=1,
        ),
    ] = 256,
    body_timeout: Annotated[
        float,
        typer.Option(
            help="Seconds a request body may take to arrive; a slower one gets 408 and its "
            "connection is closed.",
            min=0.1,
        ),
    ] = 30.0,
    http: Annotated[
        str,
        typer.Option(help="uvicorn's HTTP parser: auto (httptools when installed), h11."),
    ] = "auto",
    loop: Annotated[
        str,
        typer.Option(help="uvicorn's event loop: auto (uvloop when installed), asyncio."),
    ] = "auto",
    config: ConfigOpt = None,
) -> None:
    """Serve a store over HTTP: the REST API under /v1 (OpenAPI at /openapi.json,
    interactive docs at /docs).

    Adds return as soon as the episodes are committed (searchable at once) with a job id;
    the recipe's structures are built by the workers in the background (`build.mode =
    "queue"`), and GET /v1/jobs/{id} (or /v1/jobs/{id}/events, server-sent events) says
    how far they have got. `memstrata worker --db` processes can join on the same store.
    Errors are JSON {"error": {"code", "message"}} with their HTTP status.

    Once the store has had an API key (`memstrata keys create`), every request needs a
    valid one, even after every key is revoked (`memstrata keys reopen` opens it again);
    until then the service is open, so it binds to a loopback address only. A port that
    cannot be bound is an error (exit 2) before anything is served."""
    with errors():
        import uvicorn

        from memstrata.service import create_app, keys

        cfg = load_config(config, store=db, **{"build.mode": "queue"})
        guarded = _guarded(db)
        if not guarded and not keys.loopback(host):
            fail(
                f"refusing to serve on {host!r}: without API keys the service is open to "
                "anyone who reaches it; create one (`memstrata keys create`) or bind to "
                "127.0.0.1",
                "invalid_input",
            )
            raise typer.Exit(2)
        listening = _listen(host, port)
        port = listening.getsockname()[1]
        state = "API keys required" if guarded else "open to local clients: no API keys"
        shown = f"[{host}]" if ":" in host else host
        err.print(
            f"serving {redact(db)} on http://{shown}:{port}/v1 (explorer: /, docs: /docs); {state}",
            markup=False,
        )
        app_ = create_app(
            cfg, workers=workers, max_inflight=max_inflight, host=host, body_timeout_s=body_timeout
        )
        server = uvicorn.Server(
            uvicorn.Config(app_, host=host, port=port, log_level="info", http=http, loop=loop)
        )
        server.run(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything is printed or opened: a port in use
    (or an address not of this machine) is an error here, exit 2."""
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        return socket.create_server(address[:2], family=family, backlog=2048)
    except OSError as exc:
        why = {
            errno.EADDRINUSE: "the address is already in use (another server holds the "
            "port; choose another with --port)",
            errno.EACCES: "permission denied (ports under 1024 need privileges)",
            errno.EADDRNOTAVAIL: "the address is not one of this machine's",
        }.get(exc.errno or 0, exc.strerror or str(exc))
        fail(f"cannot listen on {host}:{port}: {why}", "bind_error")
        raise typer.Exit(2) from None


def _guarded(db: str) -> bool:
    """Whether the store needs keys (a SQLite file not made yet has had none)."""
    from memstrata.service import keys
    from memstrata.store import is_postgres, open_store

    if not is_postgres(db) and not Path(db.removeprefix("sqlite:///")).exists():
        return False
    store = open_store(db, create=False)
    try:
        return keys.guarded(store)
    finally:
        store.close()


@app.command("mcp")
def mcp(
    db: Annotated[str, typer.Option("--db", help="The store to serve (created if absent).")],
    config: ConfigOpt = None,
) -> None:
    """Serve a store as an MCP server over stdio, for an assistant or agent that starts it.

    Tools: add_memory, search_memory, ask_memory, get_memory, list_memories, update_memory,
    delete_memory, show_structure. Client configuration (the JSON desktop assistants and
    IDE agents read):

      {"mcpServers": {"memory": {"command": "memstrata",
                                 "args": ["mcp", "--db", "/path/memory.db"]}}}

    Builds run inline after each add (`build.mode`); stdout carries the protocol, logs go
    to stderr."""
    with errors():
        from memstrata.errors import ConfigError
        from memstrata.service.mcp_optional import mcp_missing_reason

        why = mcp_missing_reason()
        if why is not None:
            raise ConfigError(why)
        from memstrata.service.mcp import build_server

        build_server(load_config(config, store=db)).run("stdio")


keys_app = typer.Typer(
    help="API keys of the service: create, list, revoke; reopen a store whose keys are all "
    "revoked.",
    no_args_is_help=True,
)
app.add_typer(keys_app, name="keys")


@keys_app.command("create")
def keys_create(
    db: Annotated[str, typer.Option("--db", help="The store the key opens.")],
    namespace: Annotated[
        list[str],
        typer.Option("--namespace", "-n", help="A namespace it reaches (repeat; '*': all)."),
    ],
    scope: Annotated[str, typer.Option(help="read, write (includes read) or admin.")] = "read",
    label: Annotated[str | None, typer.Option(help="A name to tell keys apart.")] = None,
) -> None:
    """Make a key. It is printed once and only its SHA-256 is stored: keep it safe."""
    from memstrata.service import keys
    from memstrata.store import open_store

    with errors():
        store = open_store(db)
        try:
            text, made = keys.make_key(store, namespace, scope, label)
        finally:
            store.close()
        err.print(
            f"key {made.id} ({made.scope}, {', '.join(made.namespaces)}): shown once",
            markup=False,
        )
        typer.echo(text)


@keys_app.command("list")
def keys_list(
    db: Annotated[str, typer.Option("--db", help="The store.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per key.")] = False,
) -> None:
    """Every key: id, prefix, namespaces, scope, label, when made and revoked."""
    from memstrata.store import open_store

    with errors(as_json=as_json):
        store = open_store(db, create=False)
        try:
            found = store.api_keys()
        finally:
            store.close()
        for k in found:
            if as_json:
                typer.echo(json.dumps(k.model_dump()))
            else:
                state = f"revoked {k.revoked_at}" if k.revoked_at else "live"
                typer.echo(
                    f"{k.id}\t{k.prefix}...\t{k.scope}\t{','.join(k.namespaces)}\t"
                    f"{k.label or ''}\t{state}"
                )


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id, key_... (see `keys list`).")],
    db: Annotated[str, typer.Option("--db", help="The store.")],
) -> None:
    """Revoke a key at once: the next request that carries it gets 401. Revoking the last
    key leaves the store guarded (`keys reopen` opens it)."""
    from memstrata.store import open_store

    with errors():
        store = open_store(db, create=False)
        try:
            done = store.revoke_api_key(key_id)
        finally:
            store.close()
        if not done:
            fail(f"no live key {key_id!r}", "not_found")
            raise typer.Exit(1)
        err.print(f"key {key_id} revoked", markup=False)


@keys_app.command("reopen")
def keys_reopen(
    db: Annotated[str, typer.Option("--db", help="The store.")],
    yes: Annotated[bool, typer.Option("--yes", help="Yes, serve it without keys.")] = False,
) -> None:
    """Open a store whose keys are all revoked: `memstrata serve` then answers without a
    key again, on a loopback address only (a server bound elsewhere answers no one).
    Refused while a key is live. Revoking keys never does this by itself."""
    from memstrata.service import keys
    from memstrata.store import open_store

    with errors():
        if not yes:
            fail("reopening lets anyone on this machine use the store without a key; pass "
                 "--yes to do it", "invalid_input")  # fmt: skip
            raise typer.Exit(2)
        store = open_store(db, create=False)
        try:
            lifted = keys.reopen(store)
        finally:
            store.close()
        err.print(
            f"{redact(db)} is open again: {lifted} revoked key(s) no longer guard it; the "
            "service answers without a key, on a loopback address only",
            markup=False,
        )
