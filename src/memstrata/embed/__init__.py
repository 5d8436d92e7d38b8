"""Embedders: the offline MiniLM default and an OpenAI-compatible HTTP backend.

The HTTP backend (and httpx with it) is imported when first named, so that using the
default embedder, or none, does not pay for an HTTP client.
"""

from typing import TYPE_CHECKING, Any

from memstrata.embed.base import Embedder, Vectors, content_hash
from memstrata.embed.minilm import MiniLMEmbedder

if TYPE_CHECKING:
    from memstrata.embed.openai_http import EmbeddingBackendError, OpenAIEmbedder


def __getattr__(name: str) -> Any:
    if name in ("EmbeddingBackendError", "OpenAIEmbedder"):
        from memstrata.embed import openai_http

        return getattr(openai_http, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Embedder",
    "EmbeddingBackendError",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "Vectors",
    "content_hash",
]
