"""memstrata: long-term memory for LLM agents.

``Memory`` (sync) and ``AsyncMemory`` (async core) are the entry points, ``RemoteMemory``
and ``AsyncRemoteMemory`` the same verbs over the service; ``Config`` is the one
configuration object. Every error a user can meet is importable from here.
"""

from importlib.metadata import PackageNotFoundError, version

from memstrata.config import Config
from memstrata.engine import Answer, BuildBusyError, BuildReport, ShowNode
from memstrata.errors import (
    ConfigError,
    ConflictError,
    EpisodeNotFoundError,
    InvalidInputError,
    MemstrataError,
    Misdirected,
    NamespaceNotFoundError,
    NotFound,
    Overloaded,
    RequestTimeout,
    StoreClosedError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
)
from memstrata.facade import Memory
from memstrata.llm.tools import ToolsUnsupportedError
from memstrata.llm.types import (
    LLMBackendError,
    LLMError,
    LLMOutputError,
    LLMUnavailableError,
)
from memstrata.memory import AsyncMemory
from memstrata.models import Episode, Hit, SearchResult, Span
from memstrata.store import AddReport, SearchFilters
from memstrata.store.base import DeleteReport, EpisodeVersion
from memstrata.verbs import EpisodePage

#: imported on first use (a script loads neither the service nor HTTP clients it
#: does not use): the service's client, the errors of its keys, of the HTTP embedder and
#: of copying
_LAZY = {
    "CopyRefused": "memstrata.copying",
    "EmbeddingBackendError": "memstrata.embed.openai_http",
    "RemoteMemory": "memstrata.service.remote",
    "AsyncRemoteMemory": "memstrata.service.remote",
    "RemoteAddReport": "memstrata.service.remote",
    "Unauthorized": "memstrata.service.keys",
    "Forbidden": "memstrata.service.keys",
}


def __getattr__(name: str) -> object:
    """What :data:`_LAZY` names, imported on use."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


try:
    __version__ = version("memstrata")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "AddReport",
    "Answer",
    "AsyncMemory",
    "AsyncRemoteMemory",
    "BuildBusyError",
    "BuildReport",
    "Config",
    "ConfigError",
    "ConflictError",
    "CopyRefused",
    "DeleteReport",
    "EmbeddingBackendError",
    "Episode",
    "EpisodeNotFoundError",
    "EpisodePage",
    "EpisodeVersion",
    "Forbidden",
    "Hit",
    "InvalidInputError",
    "LLMBackendError",
    "LLMError",
    "LLMOutputError",
    "LLMUnavailableError",
    "Memory",
    "MemstrataError",
    "NamespaceNotFoundError",
    "Misdirected",
    "NotFound",
    "Overloaded",
    "RequestTimeout",
    "RemoteAddReport",
    "RemoteMemory",
    "SearchFilters",
    "SearchResult",
    "ShowNode",
    "Span",
    "StoreClosedError",
    "StoreError",
    "StoreLockedError",
    "StoreNotFoundError",
    "ToolsUnsupportedError",
    "Unauthorized",
    "__version__",
]
