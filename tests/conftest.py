"""Fixtures shared by the whole suite: one real MiniLM embedder per session, hermetic env."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memstrata.embed import MiniLMEmbedder

SRC = Path(__file__).resolve().parents[1] / "src"


#: the longest files of the suite (end-to-end runs through the local GGUF model): collected
#: first, so that with ``-n`` (Makefile) they start at once and the other worker takes the
#: rest beside them, rather than two of them meeting at the end
FIRST = ("_gguf.py", "test_llm_server.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not item.path.name.endswith(FIRST))  # stable: files stay whole


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the PostgreSQL server of the session, if a test started one (a test that
    needs it imports ``pgtest``; a venv without the ``postgres`` extra never does)."""
    pgtest = sys.modules.get("pgtest")
    if pgtest is not None:
        pgtest.shutdown()


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    """The real int8 ONNX MiniLM, loaded once (it takes about half a second)."""
    return MiniLMEmbedder()


@pytest.fixture(scope="session")
def model_tokens() -> Callable[[str], int]:
    """Tokens of a text in the bundled GGUF model's own tokenizer (its vocabulary only, no
    weights): what a completion budget must leave room for."""
    from llama_cpp import Llama

    from memstrata.llm.gguf import find_smollm2_gguf

    vocab = Llama(model_path=str(find_smollm2_gguf()), vocab_only=True, verbose=False)
    return lambda text: len(vocab.tokenize(text.encode("utf-8"), add_bos=False))


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


@pytest.fixture(params=["sqlite", "postgres"])
def store_at(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], str]]:
    """Where a test keeps its stores, once per backend, so the same test code runs on
    SQLite (a file per name) and on PostgreSQL (a database per name on the session's
    server, dropped afterwards; a server that cannot start fails the test, never skips)."""
    import pgtest

    made: list[Path] = []

    def at(name: str = "m") -> str:
        if request.param == "sqlite":
            return str(tmp_path / f"{name}.db")
        made.append(tmp_path / name)
        return pgtest.database_url(made[-1])

    yield at
    for tag in made:
        pgtest.drop(tag)
