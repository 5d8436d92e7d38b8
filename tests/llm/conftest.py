"""Shared fixtures for the end-to-end LLM tests (real SmolLM2 GGUF, no downloads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.llm import find_smollm2_gguf


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    path = find_smollm2_gguf()
    assert path.is_file() and path.suffix == ".gguf"
    return path
