"""Fixtures for the MindGraph tests: a real SQLite store and the real MiniLM embedder."""

from __future__ import annotations

import pytest

from memstrata.engine.contracts import Context
from memstrata.store import SQLiteStore


@pytest.fixture
def store() -> SQLiteStore:
    return SQLiteStore(":memory:")


@pytest.fixture
def ctx(store: SQLiteStore, embedder) -> Context:
    return Context(store, embedder)
