"""Configuration: defaults < TOML file < MEMSTRATA_* environment < explicit arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memstrata.config import Config
from memstrata.errors import ConfigError
from memstrata.memory import Memory

TOML = """
namespace = "from-toml"
recipe = "rag"
max_episode_chars = 5000

[llm]
kind = "openai"
base_url = "http://127.0.0.1:9999/v1"
model = "toml-model"
max_retries = 7

[budgets]
max_tokens = 1234
episodes = 4

[retrieval]
rrf_k = 33
"""


@pytest.fixture
def toml_file(tmp_path: Path) -> Path:
    path = tmp_path / "memstrata.toml"
    path.write_text(TOML)
    return path


def test_defaults() -> None:
    cfg = Config.load(env={})
    assert cfg == Config()
    assert (cfg.store, cfg.namespace, cfg.recipe) == ("memstrata.db", "default", "default")
    assert cfg.embedder.kind == "minilm" and cfg.embedder.api_key is None
    assert cfg.llm.kind == "none" and cfg.llm.max_retries == 2 and cfg.llm.concurrency == 4
    assert (cfg.budgets.episodes, cfg.budgets.max_tokens) == (10, 2000)
    assert cfg.retrieval.rrf_k is None
    assert cfg.max_episode_chars == 2_000_000


def test_toml_file(toml_file: Path) -> None:
    cfg = Config.load(toml_file, env={})
    assert (cfg.namespace, cfg.recipe, cfg.max_episode_chars) == ("from-toml", "rag", 5000)
    assert (cfg.llm.kind, cfg.llm.base_url, cfg.llm.model) == (
        "openai",
        "http://127.0.0.1:9999/v1",
        "toml-model",
    )
    assert cfg.llm.max_retries == 7 and cfg.llm.concurrency == 4  # unset keys keep defaults
    assert (cfg.budgets.max_tokens, cfg.budgets.episodes) == (1234, 4)
    assert cfg.retrieval.rrf_k == 33
    # found through MEMSTRATA_CONFIG as well
    assert Config.load(env={"MEMSTRATA_CONFIG": str(toml_file)}) == cfg


def test_environment_overrides_toml(toml_file: Path) -> None:
    env = {
        "MEMSTRATA_CONFIG": str(toml_file),
        "MEMSTRATA_NAMESPACE": "from-env",
        "MEMSTRATA_LLM__MODEL": "env-model",
        "MEMSTRATA_BUDGETS__MAX_TOKENS": "777",
        "MEMSTRATA_EMBEDDER__KIND": "openai",
        "MEMSTRATA_EMBEDDER__DIM": "768",
        "OTHER_VAR": "ignored",
    }
    cfg = Config.load(env=env)
    assert cfg.namespace == "from-env"
    assert cfg.llm.model == "env-model" and cfg.llm.base_url == "http://127.0.0.1:9999/v1"
    assert cfg.budgets.max_tokens == 777 and cfg.budgets.episodes == 4
    assert cfg.embedder.kind == "openai" and cfg.embedder.dim == 768
    assert cfg.recipe == "rag"


def test_process_environment_is_read(monkeypatch: pytest.MonkeyPatch, toml_file: Path) -> None:
    monkeypatch.setenv("MEMSTRATA_CONFIG", str(toml_file))
    monkeypatch.setenv("MEMSTRATA_LLM__MAX_RETRIES", "1")
    cfg = Config.load()
    assert cfg.namespace == "from-toml" and cfg.llm.max_retries == 1


def test_explicit_arguments_win(toml_file: Path, tmp_path: Path, embedder) -> None:
    env = {"MEMSTRATA_NAMESPACE": "from-env", "MEMSTRATA_LLM__MODEL": "env-model"}
    cfg = Config.load(
        toml_file,
        env=env,
        namespace="from-code",
        recipe=None,
        **{"llm.model": "code-model", "budgets__episodes": 2},
    )
    assert cfg.namespace == "from-code"
    assert cfg.llm.model == "code-model" and cfg.budgets.episodes == 2
    assert cfg.recipe == "rag"  # a None override keeps the lower layer
    # Memory.open passes keyword overrides the same way
    with Memory.open(
        tmp_path / "m.db", embedder=embedder, namespace="team", **{"budgets.episodes": 3}
    ) as m:
        assert m.config.namespace == "team" and m.config.budgets.episodes == 3
        assert m.config.store == str(tmp_path / "m.db")
        m.add("hello there")
        assert m.namespaces() == ["team"]


def test_invalid_toml_raises_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('namespace = "unterminated\n[llm\n')
    with pytest.raises(ConfigError, match=r"bad\.toml is not valid TOML"):
        Config.load(bad, env={})
    with pytest.raises(ConfigError, match="does not exist"):
        Config.load(tmp_path / "missing.toml", env={})


def test_invalid_values_raise_config_error(tmp_path: Path) -> None:
    # an unknown recipe is refused where the recipes are known, when a memory is opened,
    # and before the store is
    cfg = Config.load(env={"MEMSTRATA_RECIPE": "bogus"})
    with pytest.raises(ConfigError, match=r"invalid configuration: unknown recipe 'bogus'"):
        Memory.open(tmp_path / "m.db", config=cfg)
    assert not (tmp_path / "m.db").exists()
    with pytest.raises(ConfigError, match=r"(?s)invalid configuration.*max_episode_chars"):
        Config.load(env={"MEMSTRATA_MAX_EPISODE_CHARS": "lots"})
    with pytest.raises(ConfigError, match="conflicts"):
        Config.load(env={"MEMSTRATA_LLM": "x", "MEMSTRATA_LLM__MODEL": "y"})


def test_masked_hides_api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTRATA_LLM__API_KEY", "sk-secret")
    monkeypatch.setenv("MEMSTRATA_EMBEDDER__API_KEY", "sk-embed-secret")
    cfg = Config.load()
    assert cfg.llm.api_key is not None and cfg.llm.api_key.get_secret_value() == "sk-secret"
    masked = cfg.masked()
    assert masked["llm"]["api_key"] == "********"
    assert masked["embedder"]["api_key"] == "********"
    assert masked["llm"]["kind"] == "none" and masked["namespace"] == "default"
    for rendering in (json.dumps(masked), repr(cfg), str(cfg), cfg.model_dump_json()):
        assert "sk-secret" not in rendering and "sk-embed-secret" not in rendering
