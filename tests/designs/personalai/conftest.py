"""Fixtures of the PersonalAI tests (helpers in ``pai_helpers``)."""

from __future__ import annotations

import pytest

from memstrata.store import SQLiteStore


@pytest.fixture
def store() -> SQLiteStore:
    return SQLiteStore(":memory:")
