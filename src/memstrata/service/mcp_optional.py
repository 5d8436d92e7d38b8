"""The MCP server is the extra ``mcp`` (``pip install 'memstrata[mcp]'``): without it the
REST API is served all the same and ``/mcp`` answers 501 saying what to install.

The MCP SDK is optional because some agent frameworks pin an older major release of it
(CrewAI 1.x: ``mcp<2``): a user of such a framework installs memstrata without it.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memstrata.memory import AsyncMemory

logger = logging.getLogger("memstrata.service")

#: what a caller of the MCP server is told when the SDK is missing or too old
MCP_MISSING = (
    "the MCP server needs the MCP SDK 2.x: pip install 'memstrata[mcp]' (installed: {found})"
)


def mcp_version() -> str | None:
    """The installed MCP SDK's version, None when there is none."""
    if importlib.util.find_spec("mcp") is None:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp")
    except PackageNotFoundError:
        return None


def mcp_missing_reason() -> str | None:
    """Why the MCP server cannot run here (None: it can)."""
    found = mcp_version()
    if found is not None and found.split(".")[0].isdigit() and int(found.split(".")[0]) >= 2:
        return None
    return MCP_MISSING.format(found=f"mcp {found}" if found else "none")


def mcp_server(memory: Callable[[], AsyncMemory]) -> Any | None:
    """The MCP server over ``memory``, or None (logged) when it cannot run here."""
    why = mcp_missing_reason()
    if why is not None:
        logger.warning("MCP is not served: %s", why)
        return None
    from memstrata.service.mcp import build_server

    return build_server(memory=memory)


async def mcp_missing(scope: Any, receive: Any, send: Any) -> None:
    """``/mcp`` without the MCP SDK: 501 with what to install, in the service's error
    shape."""
    if scope["type"] != "http":
        return
    message = mcp_missing_reason() or "the MCP server is not mounted"
    body = json.dumps({"error": {"code": "not_implemented", "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 501, "headers": headers})
    await send({"type": "http.response.body", "body": body})
