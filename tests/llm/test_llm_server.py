"""Each design's llm tier against a real OpenAI-compatible server that enforces no schema:
llama-cpp-python's server with the bundled model on a loopback port, reached through
``llm.kind = "openai"`` with ``structured = "none"`` (only the prompts ask for JSON).

Whatever the small model writes, the accounts must add up: every call kept, repaired or
failed, every episode built or failed (visible, retryable), none lost. Completions are
capped (``llm.max_tokens``) so that an unconstrained model rambling to its budget stays
within the suite's time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Config
from memstrata.eval import chaos
from memstrata.factory import make_llm
from memstrata.llm.openai_http import OpenAICompatibleBackend
from memstrata.store import SQLiteStore

pytestmark = pytest.mark.slow

TURNS = 2
MAX_TOKENS = 96


def test_the_configuration_reaches_the_server_without_a_schema(server_url: str) -> None:
    config = Config.load(
        **{
            "llm.kind": "openai",
            "llm.base_url": server_url,
            "llm.model": "smollm2",
            "llm.structured": "none",
            "llm.max_tokens": MAX_TOKENS,
        }
    )
    client = make_llm(config, SQLiteStore(":memory:"))
    assert client is not None and client.max_tokens == MAX_TOKENS
    backend = client.backend
    assert isinstance(backend, OpenAICompatibleBackend)
    assert backend.structured_format == "none"


@pytest.mark.parametrize("design", chaos.DESIGNS)
def test_design_accounts_add_up_on_a_real_server(
    server_url: str, tmp_path: Path, embedder: Any, design: str
) -> None:
    inner = OpenAICompatibleBackend(server_url, "smollm2", timeout=300.0, structured_format="none")
    r = asyncio.run(
        chaos.run_design(
            design,
            chaos.conversation(TURNS),
            chaos.QUESTIONS[:1],
            inner,
            path=tmp_path / "m.db",
            embedder=embedder,
            rate=0.0,  # the model's own replies, undamaged
            max_tokens=MAX_TOKENS,
        )
    )
    assert r["calls"] > 0 and r["faults_injected"] == {}
    assert r["kept"] + r["repaired"] + r["failures"] == r["calls"]
    for stage, row in r["stages"].items():
        assert row["kept"] + row["repaired"] + row["failures"] == row["calls"], stage
    for phase in ("after_chaos", "after_retry"):
        a = r[phase]
        assert a["lost"] == 0 and a["queued"] == 0, (phase, a)
        assert a["done"] + a["failed"] + a["dead"] == TURNS, (phase, a)
    assert r["answers"] + r["answers_failed"] == 1
