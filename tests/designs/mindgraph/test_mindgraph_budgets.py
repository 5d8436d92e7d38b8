"""MindGraph asks with the model's budgets: the build reply, its bounds (which the paper
does not set) and the subgraph reports are the bundled model's for the small profile and
larger for a chat model; an explicit ``max_tokens`` still wins."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from memstrata.designs.mindgraph import prompts
from memstrata.designs.mindgraph.communities import llm_reports
from memstrata.designs.mindgraph.graph import ConceptGraph, Node
from memstrata.designs.mindgraph.llm_build import build_llm
from memstrata.llm import LLMClient, ScriptedBackend
from memstrata.llm.budgets import Budgets

TEXT = "Ana left the farm in May. She moved to the city for work."
#: 60 operations, each quoting 400 characters: over the small bounds, within a chat model's
OPS = {
    "operations": [
        {"op": "add_node", "id": f"n{i}", "type": "claim", "content": "c" * 400, "src": TEXT}
        for i in range(60)
    ]
}
REPORT = {"title": "Ana", "summary": "Ana moves.", "rating": 5, "findings": ["She left."]}


def longest(field: dict[str, Any]) -> int:
    """The ``maxLength`` of an optional string field (``anyOf`` a string and null)."""
    (bound,) = [b["maxLength"] for b in field.get("anyOf", [field]) if "maxLength" in b]
    return int(bound)


def build(budgets: Budgets | None, **kw: int) -> tuple[ScriptedBackend, ConceptGraph]:
    backend = ScriptedBackend([OPS])
    llm = LLMClient(backend, max_retries=0, budgets=budgets)
    graph, failed = asyncio.run(build_llm(llm, TEXT, "Why?", [(0, len(TEXT))], **kw))
    assert failed == 0
    return backend, graph


def test_the_build_asks_with_the_models_budget_and_bounds() -> None:
    small, graph = build(None)
    (asked,) = small.requests
    assert asked.max_tokens == 2048 and asked.json_schema is not None
    ops = asked.json_schema["properties"]["operations"]
    assert ops["maxItems"] == 40 and longest(ops["items"]["properties"]["src"]) == 300
    assert graph.rejected["reply_over_bound"] == 20  # cut to the small bound, counted
    chat, graph = build(Budgets.of("chat"))
    (asked,) = chat.requests
    assert asked.max_tokens == 16_384 and asked.json_schema is not None
    ops = asked.json_schema["properties"]["operations"]
    assert ops["maxItems"] == 200 and longest(ops["items"]["properties"]["content"]) == 1000
    assert "reply_over_bound" not in graph.rejected and "reply_long_string" not in graph.rejected
    given, _ = build(Budgets.of("chat"), max_tokens=3000)
    assert given.requests[0].max_tokens == 3000


def test_the_reports_ask_with_the_models_budget() -> None:
    graph = ConceptGraph()
    graph.nodes["ana"] = Node("ana", "entity", "Ana")
    for budgets, expected in ((None, 700), (Budgets.of("chat"), 2048)):
        backend = ScriptedBackend([json.dumps(REPORT)])
        llm = LLMClient(backend, max_retries=0, budgets=budgets)
        (report,) = asyncio.run(llm_reports(llm, graph, [["ana"]], "Why?"))
        assert report.title == "Ana" and backend.requests[0].max_tokens == expected
        assert prompts.REPORT_STAGE == "mindgraph.report"
