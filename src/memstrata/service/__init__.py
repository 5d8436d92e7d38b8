"""memstrata as a service: the REST and MCP app (:mod:`memstrata.service.app`), API keys
(:mod:`.keys`), the stdio MCP server (:mod:`.mcp`) and the remote client (:mod:`.remote`).

The app is imported on first use: a remote client needs none of FastAPI or the MCP SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memstrata.service.app import MAX_BODY, create_app

__all__ = ["MAX_BODY", "create_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from memstrata.service import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
