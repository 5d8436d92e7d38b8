"""Fixtures of the PersonalAI tests (helpers in ``pai_helpers``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from memstrata.importers import jsonl
from memstrata.store import SQLiteStore


@pytest.fixture
def store() -> SQLiteStore:
    return SQLiteStore(":memory:")


@pytest.fixture
def sample() -> list[dict]:
    path = resources.files("memstrata.data").joinpath("sample_conversation.jsonl")
    return [item for _, item in jsonl.read(Path(str(path))) if isinstance(item, dict)]
