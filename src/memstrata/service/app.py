"""The REST service: the verbs of :class:`~memstrata.memory.AsyncMemory` under ``/v1``.

One memory (one store) per app, opened in the app's lifespan on the server's own event
loop, with the build worker running beside the requests (``build.mode = "queue"``): an
add commits its episodes and returns at once (they are searchable by the store's own
routes from then on), and the structures follow in the background. Errors are JSON
``{"error": {"code", "message"}}`` with the status that says what went wrong, never a
stack trace. Every request passes :class:`~memstrata.service.http.Guard` first: it is
authenticated from its headers before its body is read, and each route declares the scope
it needs through its dependency (``read``, ``write``, ``admin``), which the guard reads.
The routes are one router per resource (:mod:`memstrata.service.routes`); they reach the
store only through the memory's public verbs and attributes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI

from memstrata.config import Config
from memstrata.engine.registry import Registry
from memstrata.engine.worker import run_worker
from memstrata.memory import AsyncMemory
from memstrata.service.bodies import SAYS
from memstrata.service.explorer import install as install_explorer
from memstrata.service.http import BodyLimit, Guard, error, install_errors, route_needs
from memstrata.service.mcp_optional import mcp_missing, mcp_server
from memstrata.service.openapi import install_openapi
from memstrata.service.routes import install as install_routes
from memstrata.service.routes.common import Served, served

#: the largest request body read, in bytes (a batch of a few thousand turns)
MAX_BODY = 10 * 1024 * 1024
#: requests handled at once; more are answered 429 at once rather than queued unseen
MAX_INFLIGHT = 256
#: how long a request body may take to arrive, in seconds (then 408, connection closed)
BODY_TIMEOUT_S = 30.0


def create_app(
    config: Config,
    *,
    max_body: int = MAX_BODY,
    workers: int = 1,
    max_inflight: int = MAX_INFLIGHT,
    host: str = "127.0.0.1",
    body_timeout_s: float = BODY_TIMEOUT_S,
) -> FastAPI:
    """The app over the store ``config.store`` names, with ``workers`` build workers in
    its process (0: none, for a store whose ``memstrata worker`` processes build apart).
    ``host`` is the address the server binds: an open store (no key) is served only when
    it is a loopback one, and only under a loopback host name."""
    app = FastAPI(
        title="memstrata",
        version="1",
        description="Long-term memory for LLM agents: episodes in, cited context out.",
        lifespan=_lifespan,
    )
    state = Served(config, host, workers)
    state.agent = mcp_server(state.mem)
    app.state.served = state
    app.add_middleware(BodyLimit, limit=max_body)
    app.add_middleware(
        Guard,
        memory=state.mem,
        needs=route_needs(app, {"/mcp": "read"}),
        host=host,
        limit=max_inflight,
        body_timeout_s=body_timeout_s,
    )
    install_errors(app)
    install_openapi(app, list(Registry.load(config.recipes).recipes))
    # MCP over streamable HTTP, with the same keys: any valid key may connect (the guard
    # checks it), and each tool checks what it reaches (the SDK's transport is below /mcp/).
    if state.agent is not None:
        app.mount("/mcp", state.agent.streamable_http_app(streamable_http_path="/"))
    else:
        app.mount("/mcp", mcp_missing)
    install_routes(app)
    install_explorer(app)  # the web page at / and what only it needs
    return app


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The app's memory, open while it serves, with its build workers and MCP sessions."""
    state = served(app)
    memory = await AsyncMemory.open(config=state.config)
    state.memory = memory
    tasks = [memory.start_worker()] if state.workers else []
    for i in range(1, state.workers):  # more drains at once, each starting at another namespace
        tasks.append(asyncio.create_task(_worker(memory, i)))
    agent = state.agent
    try:
        async with agent.session_manager.run() if agent else contextlib.nullcontext():
            yield
    finally:
        await memory.close()  # stops the worker after its current batch
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task


async def _worker(memory: AsyncMemory, rotate: int) -> Any:
    """One more in-process worker, stopped with the memory's own."""
    return await run_worker(
        memory.engine,
        memory.config.recipe,
        stop=memory.worker.stop,
        poll_s=memory.config.build.poll_s,
        rotate=rotate,
    )


__all__ = ["BODY_TIMEOUT_S", "MAX_BODY", "MAX_INFLIGHT", "SAYS", "create_app", "error"]
