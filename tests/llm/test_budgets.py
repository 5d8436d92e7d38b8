"""The budgets per profile (:mod:`memstrata.llm.budgets`): the small profile is the
bundled model's, exactly as the designs were tuned; a chat model's are larger; the
model's own limits cap them; bad settings are refused with what is valid."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from memstrata.config import Config
from memstrata.errors import ConfigError
from memstrata.llm import LLMClient, ScriptedBackend
from memstrata.llm.budgets import BOUNDS, PROFILES, STAGES, Budgets, markdown_table
from memstrata.llm.chaos import ChaosBackend
from memstrata.llm.schema import bounded_json_schema

DOCS = Path(__file__).parents[2] / "docs" / "engine.md"

#: the budgets the designs had as constants before they asked the budgets
BUNDLED = {
    "mnemis.entities": 120,
    "mnemis.entities_reflect": 80,
    "mnemis.dedupe": 160,
    "mnemis.attributes": 360,
    "mnemis.facts": 240,
    "mnemis.facts_reflect": 120,
    "mnemis.facts_resolve": 160,
    "mnemis.hierarchy": 720,
    "mnemis.describe": 480,
    "mnemis.select": 320,
    "mnemis.rerank": 200,
    "personalai.memorize": 768,
    "personalai.qa": 400,
    "higmem.turn_analysis": 300,
    "higmem.affiliation": 60,
    "higmem.event_refresh": 400,
    "higmem.query_keywords": 60,
    "higmem.event_prediction": 120,
    "higmem.filter": 120,
    "higmem.answer": 80,
    "mindgraph.build": 2048,
    "mindgraph.answer": 1024,
    "mindgraph.report": 700,
    "memtree.aggregate": 1024,
    "memtree.answer": 200,
    # the engine's own stages, before their budgets moved here
    "answer.grounded": 200,  # GroundedParams.max_tokens
    "fusion.rerank": 200,  # the engine's rerank call
    "judge": 160,  # eval.qa.judge
}


def test_the_small_profile_is_the_bundled_models_budgets_unchanged() -> None:
    small = Budgets.of("small")
    assert (small.context_tokens, small.max_output_tokens) == (4096, 2048)
    assert {s: small.tokens(s) for s in STAGES} == BUNDLED
    assert Budgets() == small  # a client built without budgets for a small backend


def test_the_small_bounds_are_the_ones_the_reply_models_declare() -> None:
    from memstrata.designs.memtree.prompts import Summary
    from memstrata.designs.mindgraph.prompts import Operation, Operations
    from memstrata.designs.mnemis import prompts as mnemis

    def declared(model: type, field: str) -> int:
        (bound,) = [m.max_length for m in model.model_fields[field].metadata]
        return int(bound)

    small = Budgets.of("small")
    assert small.bound("mnemis.names") == declared(mnemis.EntityNames, "names") == 12
    assert small.bound("mnemis.names") == declared(mnemis.Duplicates, "resolutions")
    assert small.bound("mnemis.names") == declared(mnemis.Attributes, "entities")
    assert small.bound("mnemis.facts") == declared(mnemis.Facts, "facts") == 6
    assert small.bound("mnemis.summary_chars") == declared(mnemis.EntityAttributes, "summary")
    assert small.bound("mnemis.fact_chars") == declared(mnemis.ExtractedFact, "fact")
    assert small.bound("mnemis.fact_resolutions") == declared(mnemis.FactResolutions, "resolutions")
    assert small.bound("mindgraph.operations") == declared(Operations, "operations") == 40
    assert small.bound("mindgraph.quote_chars") == declared(Operation, "src") == 300
    assert small.bound("memtree.summary_chars") == declared(Summary, "summary")
    default = inspect.signature(bounded_json_schema).parameters["max_items"].default
    assert small.bound("schema.array_items") == default == 64


def test_the_chat_profile_gives_every_stage_and_bound_more_room() -> None:
    small, chat = Budgets.of("small"), Budgets.of("chat")
    assert (chat.context_tokens, chat.max_output_tokens) == (131_072, 16_384)
    for stage in STAGES:
        assert small.tokens(stage) < chat.tokens(stage) <= chat.max_output_tokens, stage
    for name in BOUNDS:
        assert small.bound(name) < chat.bound(name), name
    # a realistic reply of six facts with dates, or eight attributes, fits with room
    assert chat.tokens("mnemis.facts") >= 6 * 200 and chat.bound("mnemis.facts") >= 8
    assert chat.tokens("mnemis.attributes") >= 8 * 150
    assert chat.tokens("mindgraph.build") == chat.max_output_tokens  # the paper sets none
    assert chat.tokens("personalai.qa") == 2048  # the paper's num_predict


def test_the_models_limits_cap_the_profiles_budgets() -> None:
    llama = Budgets.of("chat", context_tokens=8192)  # an 8K model: half of it to write
    assert (llama.context_tokens, llama.max_output_tokens) == (8192, 4096)
    assert llama.tokens("mindgraph.build") == 4096
    assert llama.tokens("mnemis.facts") == 4096  # 8,192 for a 128K model
    assert llama.tokens("mnemis.entities") == 1024  # below the cap: the profile's
    terse = Budgets.of("chat", max_output_tokens=1000)
    assert terse.context_tokens == 131_072
    assert max(terse.tokens(s) for s in STAGES) == 1000
    assert terse.bound("mnemis.facts") == Budgets.of("chat").bound("mnemis.facts")
    wide = Budgets.of("small", context_tokens=16_384, max_output_tokens=4096)
    assert {s: wide.tokens(s) for s in STAGES} == BUNDLED  # the small profile's, no more


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"llm.profile": "huge"}, "unknown llm.profile 'huge'; valid: small, chat"),
        ({"llm.context_tokens": 0}, "llm.context_tokens must be a positive number"),
        ({"llm.context_tokens": -5}, "not -5"),
        ({"llm.max_output_tokens": 0}, "llm.max_output_tokens must be a positive number"),
        ({"llm.context_tokens": 1}, "llm.context_tokens (1) leaves no room for a reply"),
        (
            {"llm.context_tokens": 4096, "llm.max_output_tokens": 4096},
            "llm.max_output_tokens (4096) must be below llm.context_tokens (4096)",
        ),
    ],
)
def test_bad_settings_are_refused_saying_what_is_valid(
    settings: dict[str, object], says: str
) -> None:
    with pytest.raises(ConfigError, match="invalid configuration") as caught:
        Config.load(env={}, **{"llm.kind": "openai", **settings})
    assert says in str(caught.value)
    with pytest.raises(ConfigError, match="valid: small, chat"):
        Budgets.of("big")


def test_the_profile_follows_the_backend_unless_set() -> None:
    def profile(**settings: object) -> str:
        return Config.load(env={}, **settings).llm.budgets().profile

    assert profile(**{"llm.kind": "openai"}) == "chat"
    assert profile(**{"llm.kind": "gguf"}) == "small"
    assert profile(**{"llm.kind": "chaos", "llm.chaos.inner": "openai"}) == "chat"
    assert profile(**{"llm.kind": "chaos", "llm.chaos.inner": "gguf"}) == "small"
    assert profile(**{"llm.kind": "openai", "llm.profile": "small"}) == "small"
    assert profile(**{"llm.kind": "gguf", "llm.profile": "chat"}) == "chat"
    env = {"MEMSTRATA_LLM__KIND": "openai", "MEMSTRATA_LLM__CONTEXT_TOKENS": "32768"}
    budgets = Config.load(env=env).llm.budgets()
    assert (budgets.profile, budgets.context_tokens, budgets.max_output_tokens) == (
        "chat",
        32_768,
        16_384,
    )


def test_a_client_built_in_code_gets_its_backends_budgets() -> None:
    assert LLMClient(ScriptedBackend([])).budgets == Budgets.of("small")
    tiny = LLMClient(ScriptedBackend([], context_tokens=1024)).budgets
    assert (tiny.context_tokens, tiny.max_output_tokens) == (1024, 512)
    assert tiny.tokens("memtree.aggregate") == 512

    server = ScriptedBackend([], name="openai")  # a model behind an OpenAI-style server
    assert LLMClient(server).budgets.profile == "chat"
    wrapped = ChaosBackend(server, seed=0, rate=0.0)
    assert LLMClient(wrapped).budgets.profile == "chat"
    given = Budgets.of("chat", max_output_tokens=900)
    client = LLMClient(ScriptedBackend([]), budgets=given)
    assert client.scoped(namespace="n").budgets is given


def test_an_unknown_stage_is_an_error_not_a_default() -> None:
    with pytest.raises(KeyError, match="no stage 'mnemis.everything'"):
        Budgets().tokens("mnemis.everything")
    with pytest.raises(KeyError, match="no bound 'facts'"):
        Budgets().bound("facts")


def test_the_table_in_the_docs_is_the_modules() -> None:
    table = markdown_table()
    assert table in DOCS.read_text(), "docs/engine.md: paste `memstrata config --profiles`"
    assert all(f"`{s}` tokens" in table for s in STAGES) and all(f"`{b}`" in table for b in BOUNDS)
    assert set(PROFILES) == {"small", "chat"}
