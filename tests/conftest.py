"""Fixtures shared by the whole suite: one real MiniLM embedder per session, hermetic env."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memstrata.embed import MiniLMEmbedder

SRC = Path(__file__).resolve().parents[1] / "src"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the PostgreSQL server of the session, if a test started one."""
    import pgtest

    pgtest.shutdown()


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    """The real int8 ONNX MiniLM, loaded once (it takes about half a second)."""
    return MiniLMEmbedder()


@pytest.fixture(autouse=True)
def _no_memstrata_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's MEMSTRATA_* variables must not change what the tests see."""
    for key in list(os.environ):
        if key.startswith("MEMSTRATA_"):
            monkeypatch.delenv(key)


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """Environment for child Python processes: finds the package under src/."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTRATA_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    return env
