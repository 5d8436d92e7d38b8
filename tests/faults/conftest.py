"""A fault harness per module: template stores are made once, each test copies them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memstrata.embed import MiniLMEmbedder
from memstrata.eval.faults import Harness

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def child_env() -> dict[str, str]:
    """The children import this tree's memstrata (PYTHONPATH first)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTRATA_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    return env


@pytest.fixture(scope="module")
def harness(
    tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder, child_env: dict[str, str]
) -> Harness:
    """24 turns in batches of 4: a build has six commit points to be killed between."""
    return Harness(tmp_path_factory.mktemp("faults"), child_env, embedder, turns=24, batch_size=4)
