"""Mnemis's replies sized to the model (:mod:`memstrata.designs.mnemis.sizing`): the
bundled model's budgets keep six facts and 240-character summaries, a chat model's keep
what a realistic reply holds; each stage asks with the model's completion budget."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from test_mnemis_llm_rules import episode

from memstrata.designs.mnemis import prompts
from memstrata.designs.mnemis.base_graph_llm import LLMBaseGraph
from memstrata.designs.mnemis.graph import Graph
from memstrata.designs.mnemis.sizing import sized
from memstrata.llm import LLMClient, MemoryUsageSink
from memstrata.llm.budgets import Budgets
from memstrata.llm.salvage import shorten
from memstrata.llm.schema import bounded_json_schema
from memstrata.llm.scripted import ScriptedBackend
from memstrata.store import SQLiteStore

PLACES = ["Lisbon", "Porto", "Braga", "Faro", "Evora", "Sintra", "Cascais", "Coimbra"]
#: 320 characters: over the small profile's 240, within a chat model's 400
SUMMARY = (
    "Acme is the software firm in Lisbon where Maya has worked since January 2024 on the "
    "data platform team. She leads its sensor pipeline project and travels to the Porto "
    "office each month. Acme opened offices in Braga and Faro last year. Maya's manager "
    "there is Ben, who hired her after the Lisbon conference talk."
)
FACTS = [
    {"source": "Maya", "target": "Acme", "relation": "visits", "fact": f"Maya visits {p} for Acme."}
    for p in PLACES
] + [
    {"source": "Maya", "target": "Acme", "relation": "works at", "fact": "Maya works at Acme."},
    {"source": "Acme", "target": "Maya", "relation": "hired", "fact": "Acme hired Maya in 2024."},
]


def extract(budgets: Budgets | None, embedder) -> tuple[Graph, ScriptedBackend, MemoryUsageSink]:  # type: ignore[no-untyped-def]
    store = SQLiteStore(":memory:")
    ep = episode(store, "e1", "I work at Acme and travel a lot.", datetime(2024, 1, 1, tzinfo=UTC))
    backend = ScriptedBackend(
        [
            {"names": ["Acme"]},
            {"names": []},
            {"entities": [{"name": "Acme", "summary": SUMMARY, "tag": ["company"]}]},
            {"facts": FACTS},
            {"facts": []},
        ]
    )
    usage = MemoryUsageSink()
    graph = Graph(store, embedder, "t")
    builder = LLMBaseGraph(graph, LLMClient(backend, max_retries=0, budgets=budgets, usage=usage))
    asyncio.run(builder.add([ep]))
    assert builder.failed == {} and backend.remaining == 0
    return graph, backend, usage


def test_the_bundled_models_budgets_keep_six_facts_and_short_summaries(embedder) -> None:  # type: ignore[no-untyped-def]
    graph, backend, usage = extract(None, embedder)
    assert [r.max_tokens for r in backend.requests] == [120, 80, 360, 240, 120]
    assert len(graph.facts) == 6
    acme = next(e for e in graph.entities.values() if e.name == "Acme")
    assert acme.summary == shorten(SUMMARY, 240) != SUMMARY  # cut at its last sentence end
    assert acme.summary.endswith("last year.")
    assert usage.summary()["mnemis.facts"]["truncated"] == len(FACTS) - 6


def test_a_chat_models_budgets_keep_a_realistic_reply_whole(embedder) -> None:  # type: ignore[no-untyped-def]
    chat = Budgets.of("chat")
    graph, backend, usage = extract(chat, embedder)
    stages = ["entities", "entities_reflect", "attributes", "facts", "facts_reflect"]
    assert [r.max_tokens for r in backend.requests] == [chat.tokens(f"mnemis.{s}") for s in stages]
    assert [r.max_tokens for r in backend.requests] == [1024, 1024, 8192, 8192, 4096]
    facts_schema = backend.requests[3].json_schema
    assert facts_schema is not None and facts_schema["properties"]["facts"]["maxItems"] == 24
    assert len(graph.facts) == len(FACTS)
    acme = next(e for e in graph.entities.values() if e.name == "Acme")
    assert acme.summary == SUMMARY
    assert all(row["truncated"] == row["rejected"] == 0 for row in usage.summary().values())


@pytest.mark.parametrize("profile", ["small", "chat"])
def test_sizing_comes_before_the_names_narrow_a_reply(profile: str) -> None:
    budgets = Budgets.of(profile)
    _, model = prompts.dedupe_entities([("Acme", [(0, "ACME")]), ("Ben", [])], budgets)
    schema = bounded_json_schema(model)
    assert schema["properties"]["resolutions"]["maxItems"] == 2  # one per name asked
    item = schema["properties"]["resolutions"]["items"]["properties"]["name"]
    assert item["enum"] == ["Acme", "Ben"]
    _, facts = prompts.extract_facts("x", [], ["Maya", "Acme"], "2024", budgets)
    schema = bounded_json_schema(facts)
    assert schema["properties"]["facts"]["maxItems"] == budgets.bound("mnemis.facts")
    fact = schema["properties"]["facts"]["items"]["properties"]
    assert fact["fact"]["maxLength"] == budgets.bound("mnemis.fact_chars")
    assert fact["source"]["enum"] == ["Maya", "Acme"]
    assert (sized(prompts.Facts, budgets) is prompts.Facts) == (profile == "small")
