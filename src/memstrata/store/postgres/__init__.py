"""The PostgreSQL backend: :class:`PostgresStore` (pgvector for vectors, BM25 that ranks
as the SQLite store's FTS5 does) and :mod:`.server`, a local server for users and tests."""

from __future__ import annotations

from memstrata.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
