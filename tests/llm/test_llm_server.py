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
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memstrata.config import Config
from memstrata.eval import chaos
from memstrata.factory import make_llm
from memstrata.llm import find_smollm2_gguf
from memstrata.llm.openai_http import OpenAICompatibleBackend
from memstrata.store import SQLiteStore

pytestmark = pytest.mark.slow

TURNS = 2
MAX_TOKENS = 96


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The llama.cpp server on a free loopback port; its base URL."""
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(find_smollm2_gguf()),
                "--model_alias",
                "smollm2",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "4096",
                "--n_threads",
                "2",
                "--seed",
                "0",
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}/v1"
        try:
            for _ in range(600):  # the model loads in seconds; a busy machine is slower
                if proc.poll() is not None:
                    pytest.fail(f"llama.cpp server exited: {log.read_text()[-2000:]}")
                try:
                    if httpx.get(f"{url}/models", timeout=1.0).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            else:
                pytest.fail("llama.cpp server did not come up")
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_the_configuration_reaches_the_server_without_a_schema(server: str) -> None:
    config = Config.load(
        **{
            "llm.kind": "openai",
            "llm.base_url": server,
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
    server: str, tmp_path: Path, embedder: Any, design: str
) -> None:
    inner = OpenAICompatibleBackend(server, "smollm2", timeout=300.0, structured_format="none")
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
