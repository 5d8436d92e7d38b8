"""memstrata: long-term memory for LLM agents.

``Memory`` (sync) and ``AsyncMemory`` (async core) are the entry points; ``Config`` is the
one configuration object.
"""

from memstrata.config import Config
from memstrata.errors import (
    ConfigError,
    InvalidInputError,
    MemstrataError,
    NamespaceNotFoundError,
    StoreError,
    StoreLockedError,
)
from memstrata.memory import AsyncMemory, Memory
from memstrata.models import Episode, Hit, SearchResult, Span
from memstrata.store import SearchFilters

__all__ = [
    "AsyncMemory",
    "Config",
    "ConfigError",
    "Episode",
    "Hit",
    "InvalidInputError",
    "Memory",
    "MemstrataError",
    "NamespaceNotFoundError",
    "SearchFilters",
    "SearchResult",
    "Span",
    "StoreError",
    "StoreLockedError",
]
