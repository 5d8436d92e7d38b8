"""Fixtures of the HiGMem tests (helpers in ``higmem_helpers``)."""

from __future__ import annotations

import pytest

from memstrata.store import SQLiteStore


@pytest.fixture
def store() -> SQLiteStore:
    return SQLiteStore(":memory:")
