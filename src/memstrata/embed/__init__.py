"""Embedders: the offline MiniLM default and an OpenAI-compatible HTTP backend."""

from memstrata.embed.base import Embedder, Vectors, content_hash
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.embed.openai_http import EmbeddingBackendError, OpenAIEmbedder

__all__ = [
    "Embedder",
    "EmbeddingBackendError",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "Vectors",
    "content_hash",
]
