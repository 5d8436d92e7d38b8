"""Shared fixtures for the end-to-end LLM tests (real SmolLM2 GGUF, no downloads)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata.llm import find_smollm2_gguf
from waiting import until_served

STARTUP_TIMEOUT_S = 120.0


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    path = find_smollm2_gguf()
    assert path.is_file() and path.suffix == ".gguf"
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def server_url(smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server with the bundled model on a free
    loopback port, one for the session; its base URL."""
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(smollm2_gguf),
        "--model_alias", "smollm2",
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", "4096",
        "--n_threads", "1",  # generation; prompts use every core (the server's default)
        "--seed", "0",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        until_served(
            f"{base}/models", proc, lambda: log_path.read_text()[-3000:], timeout=STARTUP_TIMEOUT_S
        )
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
