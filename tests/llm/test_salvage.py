"""Salvage: a reply that breaks its schema keeps every good item, counted by reason, and
a reply with nothing usable is a failure, never an empty success.

The replies are what an OpenAI-compatible server without schema enforcement sends for
the designs' own answer models.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel, Field

from memstrata.designs.higmem.prompts import TurnAnalysis
from memstrata.designs.memtree.prompts import Summary
from memstrata.designs.mindgraph.prompts import Operations
from memstrata.designs.mnemis.prompts import (
    Attributes,
    CategoryGroups,
    EntityNames,
    Facts,
    NodeSelection,
    node_selection_model,
)
from memstrata.llm import LLMClient, LLMOutputError, MemoryUsageSink, Message, ScriptedBackend
from memstrata.llm.salvage import Salvage, shorten
from memstrata.llm.schema import parse_structured
from memstrata.llm.types import Completion


def parsed(reply: Any, model: type[BaseModel]) -> tuple[BaseModel, Salvage]:
    repairs = Salvage()
    text = reply if isinstance(reply, str) else json.dumps(reply)
    return parse_structured(text, model, repairs), repairs


def fact(i: int) -> dict[str, Any]:
    return {"source": "Ann", "target": f"t{i}", "relation": "likes", "fact": f"Ann likes t{i}."}


def test_facts_over_their_bound_keep_the_first_six() -> None:
    value, repairs = parsed({"facts": [fact(i) for i in range(7)]}, Facts)
    assert isinstance(value, Facts)
    assert [f.target for f in value.facts] == [f"t{i}" for i in range(6)]
    assert dict(repairs.reasons) == {"over_bound": 1}
    assert (repairs.truncated, repairs.rejected) == (1, 0)


def test_sixteen_categories_keep_fifteen() -> None:
    groups = [
        {"category": f"c{i}", "description": "", "tag": [], "indexes": [i]} for i in range(16)
    ]
    value, repairs = parsed({"categories": groups}, CategoryGroups)
    assert isinstance(value, CategoryGroups) and len(value.categories) == 15
    assert repairs.reasons["over_bound"] == 1


def test_sixteen_selected_nodes_of_fifteen_shown_keep_fifteen() -> None:
    nodes = [{"name": f"n{i}", "uuid": f"u{i}", "get_all_children": False} for i in range(16)]
    value, repairs = parsed({"nodes": nodes}, node_selection_model(15))
    assert isinstance(value, NodeSelection) and len(value.nodes) == 15


def test_a_long_summary_is_cut_at_a_sentence_and_keeps_every_entity() -> None:
    long = "Ann is a nurse in Leeds. " * 12  # 300 characters against a bound of 240
    entities = [{"name": "Ann", "summary": long, "tag": []}, {"name": "Bo", "summary": "A cat."}]
    value, repairs = parsed({"entities": entities}, Attributes)
    assert isinstance(value, Attributes) and [e.name for e in value.entities] == ["Ann", "Bo"]
    assert value.entities[0].summary.endswith("Leeds.")
    assert len(value.entities[0].summary) <= 240
    assert dict(repairs.reasons) == {"long_string": 1}


def test_a_top_level_list_over_its_bound_is_wrapped_and_truncated() -> None:
    value, repairs = parsed([f"name {i}" for i in range(16)], EntityNames)
    assert isinstance(value, EntityNames) and len(value.names) == 12
    assert repairs.reasons["over_bound"] == 4


def test_nine_keywords_keep_the_note() -> None:
    reply = {
        "keywords": [f"k{i}" for i in range(9)],
        "tags": ["work"],
        "context": "Ann talks about her job.",
        "dates": [],
        "fact": "Ann started a new job.",
    }
    value, repairs = parsed(reply, TurnAnalysis)
    assert isinstance(value, TurnAnalysis)
    assert len(value.keywords) == 8 and value.fact == "Ann started a new job."
    assert repairs.reasons["over_bound"] == 1


def test_an_operation_outside_the_vocabulary_drops_only_itself() -> None:
    ops = [
        {"op": "add_node", "id": "n1", "type": "entity", "content": "Paris"},
        {"op": "add_node", "id": "n2", "type": "location", "content": "Lyon"},
        {"op": "add_edge", "source": "n1", "target": "n3", "relation": "near"},
    ]
    value, repairs = parsed({"operations": ops}, Operations)
    assert isinstance(value, Operations)
    assert [o.id for o in value.operations] == ["n1", None]
    assert dict(repairs.reasons) == {"unknown_value": 1}
    assert (repairs.truncated, repairs.rejected) == (0, 1)


def test_forty_one_operations_keep_forty() -> None:
    ops = [{"op": "add_node", "id": f"n{i}", "type": "entity", "content": "x"} for i in range(41)]
    value, repairs = parsed({"operations": ops}, Operations)
    assert isinstance(value, Operations) and len(value.operations) == 40


def test_wrong_types_drop_the_item_not_the_reply() -> None:
    reply = {"facts": [fact(0), {"source": 3, "target": ["x"], "fact": 7}, fact(2), "Ann"]}
    value, repairs = parsed(reply, Facts)
    assert isinstance(value, Facts) and [f.target for f in value.facts] == ["t0", "t2"]
    assert repairs.rejected == 2 and repairs.truncated == 0


def test_every_item_broken_is_a_failure_not_an_empty_answer() -> None:
    # The inner objects would each validate against a model whose fields have defaults;
    # they are fragments of the reply and never taken for it.
    reply = {"facts": [{"source": "Ann", "relation": "x" * 99} for _ in range(3)]}
    with pytest.raises(LLMOutputError, match="every item"):
        parsed(reply, Facts)


def test_an_inner_fragment_is_never_the_answer() -> None:
    class Loose(BaseModel):
        items: list[str] = Field(default_factory=list, max_length=2)
        note: str = ""

    # The outer value breaks the model beyond repair (a wrong top-level type with no
    # default left to fall back on leaves nothing); the inner {"note": ...} would pass.
    with pytest.raises(LLMOutputError):
        parsed('{"items": 5, "extra": {"note": "fragment"}}', Loose)


def test_a_clean_empty_answer_is_kept() -> None:
    value, repairs = parsed({"facts": []}, Facts)
    assert value == Facts(facts=[]) and not repairs.repaired


def test_a_summary_cut_at_the_length_limit_keeps_whole_sentences() -> None:
    text = '{"summary": "Ann moved to Leeds in May. She started as a nurse and then wo'
    value, repairs = parsed(text, Summary)
    assert isinstance(value, Summary) and value.summary == "Ann moved to Leeds in May."
    assert dict(repairs.reasons) == {"cut_off": 1}


def test_a_summary_cut_before_its_first_sentence_is_a_failure() -> None:
    with pytest.raises(LLMOutputError):
        parsed('{"summary": "Ann moved to Leeds and then', Summary)


def test_shorten_prefers_sentence_then_word_ends() -> None:
    assert shorten("One two. Three four five", 15) == "One two."
    assert shorten("alpha beta gamma delta", 15) == "alpha beta"
    assert shorten("short", 15) == "short"


class _CutBackend:
    """Answers with the text given and ``finish_reason = length``, as a server does at
    its token limit."""

    name = "cut"
    model = "cut"

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.requests: list[list[Message]] = []

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
    ) -> Completion:
        self.requests.append(messages)
        text = self.replies.pop(0)
        return Completion(text, 10, len(text.split()), "cut", finish_reason="length")


PROMPT = [Message(role="user", content="Summarize.")]


def test_client_records_outcomes_and_reasons() -> None:
    usage = MemoryUsageSink()
    replies: list[Any] = [
        {"facts": [fact(i) for i in range(7)]},
        {"facts": [fact(0)]},
        "no json here",
        "still none",
    ]
    client = LLMClient(ScriptedBackend(replies), usage=usage, backoff=0.0)

    async def run() -> None:
        assert len((await client.structured(PROMPT, Facts, stage="s")).facts) == 6
        assert len((await client.structured(PROMPT, Facts, stage="s")).facts) == 1
        with pytest.raises(LLMOutputError):
            await client.structured(PROMPT, Facts, stage="s")

    asyncio.run(run())
    assert [r.outcome for r in usage.records] == ["repaired", "kept", "failed"]
    assert usage.records[0].dropped == {"over_bound": 1}
    summary = usage.summary()["s"]
    assert (summary["kept"], summary["repaired"], summary["failures"]) == (1, 1, 1)
    assert (summary["truncated"], summary["rejected"]) == (1, 0)


#: the model's output limit (the small profile's): a reply cut there gets no more room
LIMIT = 2048


def test_a_cut_reply_with_nothing_usable_is_asked_again_to_be_shorter() -> None:
    backend = _CutBackend(['{"summary": "Ann moved to', '{"summary": "Ann moved. She'])
    usage = MemoryUsageSink()
    client = LLMClient(backend, usage=usage, backoff=0.0)
    value = asyncio.run(client.structured(PROMPT, Summary, stage="sum", max_tokens=LIMIT))
    assert value.summary == "Ann moved."
    assert "cut off at the length limit" in backend.requests[1][-1].content
    (rec,) = usage.records
    assert rec.outcome == "repaired" and rec.attempts == 2 and rec.dropped == {"cut_off": 1}


def test_plain_text_cut_at_the_limit_is_counted() -> None:
    usage = MemoryUsageSink()
    client = LLMClient(_CutBackend(["Ann moved to Leeds and"]), usage=usage)
    assert asyncio.run(client.text(PROMPT, stage="t", max_tokens=LIMIT)) == "Ann moved to Leeds and"
    (rec,) = usage.records
    assert rec.outcome == "repaired" and rec.dropped == {"cut_off": 1}
