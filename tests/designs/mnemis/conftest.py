"""Fixtures for the structure tests: the bundled sample conversation as import items."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from memstrata.importers import jsonl


@pytest.fixture
def sample() -> list[dict]:
    path = resources.files("memstrata.data").joinpath("sample_conversation.jsonl")
    return [item for _, item in jsonl.read(Path(str(path))) if isinstance(item, dict)]
