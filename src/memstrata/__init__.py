"""memstrata: long-term memory for LLM agents.

``Memory`` (sync) and ``AsyncMemory`` (async core) are the entry points; ``Config`` is the
one configuration object.
"""

from importlib.metadata import PackageNotFoundError, version

from memstrata.config import Config
from memstrata.errors import (
    ConfigError,
    ConflictError,
    InvalidInputError,
    MemstrataError,
    NamespaceNotFoundError,
    StoreClosedError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
)
from memstrata.memory import AsyncMemory, Memory
from memstrata.models import Episode, Hit, SearchResult, Span
from memstrata.store import SearchFilters


def __getattr__(name: str) -> object:
    """``RemoteMemory`` and ``AsyncRemoteMemory`` (the service's client), imported on use."""
    if name in ("RemoteMemory", "AsyncRemoteMemory"):
        from memstrata.service import remote

        return getattr(remote, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


try:
    __version__ = version("memstrata")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "AsyncMemory",
    "AsyncRemoteMemory",
    "Config",
    "ConfigError",
    "ConflictError",
    "Episode",
    "Hit",
    "InvalidInputError",
    "Memory",
    "MemstrataError",
    "NamespaceNotFoundError",
    "RemoteMemory",
    "SearchFilters",
    "SearchResult",
    "Span",
    "StoreClosedError",
    "StoreError",
    "StoreLockedError",
    "StoreNotFoundError",
    "__version__",
]
