"""A served store: the REST app on a free loopback port, run by uvicorn in a thread."""

from __future__ import annotations

import contextlib
import gc
import socket
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from memstrata.config import Config
from memstrata.service import create_app

LIMIT = 64 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server(uvicorn.Server):
    """uvicorn's server, telling when it has started or given up (``up``), so that the
    caller waits for that rather than for a time."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.up = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets)
        finally:  # also when it could not listen (it exits then)
            self.up.set()


@contextlib.contextmanager
def serving(config: Config, host: str = "127.0.0.1", **app_options: Any) -> Iterator[httpx.Client]:
    """An HTTP client of the app over ``config``'s store, served on a free port of
    ``host`` (the client talks to it over loopback)."""
    port = free_port()
    if host != "127.0.0.1":  # the app's default
        app_options["host"] = host
    server = _Server(
        uvicorn.Config(
            create_app(config, **{"max_body": LIMIT, **app_options}),
            host=host,
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=5,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    assert server.up.wait(60) and server.started  # not started: it ended, or hangs
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/v1", timeout=60) as client:
            yield client
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        # The server's loop ends with the thread; what it leaves for the garbage collector
        # (a keep-alive connection's transport) is collected here, not in a later test.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[httpx.Client, Path]]:
    """An HTTP client of the app over a fresh store, and the store's path."""
    db = tmp_path / "served.db"
    config = Config.load(store=str(db), **{"build.mode": "queue", "build.poll_s": 0.05})
    with serving(config) as client:
        yield client, db
