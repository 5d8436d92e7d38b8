"""A reply the token limit stopped (``finish_reason`` "length") is not whole: the client
asks the same question again, once, with twice the room, within the model's output
limit, the client's ceiling and what the context leaves beside the prompt. Only a reply
cut again is kept, counted ``cut_off``; a reply that came whole is stored whole."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from memstrata.llm import LLMClient, MemoryUsageSink, Message, ScriptedBackend
from memstrata.llm.budgets import Budgets
from memstrata.llm.types import Completion


class Fact(BaseModel):
    fact: str = Field(max_length=200)


class Facts(BaseModel):
    facts: list[Fact] = Field(default_factory=list, max_length=12)


PROMPT = [Message(role="user", content="List the facts.")]
SIX = {"facts": [{"fact": f"Maya said fact number {i}."} for i in range(6)]}
HALF = '{"facts": [{"fact": "Maya said fact number 0."}, {"fact": "Maya said fact number 1. So'


def cut(text: str = HALF, prompt_tokens: int = 10) -> Completion:
    return Completion(text, prompt_tokens, len(text.split()), "scripted", finish_reason="length")


def ask(client: LLMClient, max_tokens: int = 240) -> Facts:
    return asyncio.run(client.structured(PROMPT, Facts, stage="s", max_tokens=max_tokens))


def test_a_cut_reply_is_asked_again_with_twice_the_room_and_the_whole_one_kept() -> None:
    backend = ScriptedBackend([cut(), SIX])
    usage = MemoryUsageSink()
    got = ask(LLMClient(backend, usage=usage, max_retries=0))
    assert len(got.facts) == 6  # not the two facts of the cut reply
    assert [r.max_tokens for r in backend.requests] == [240, 480]
    assert backend.requests[1].messages == PROMPT  # the same question, no complaint
    (rec,) = usage.records
    # asked again, so repaired (as any call asked again), with nothing cut or dropped
    assert (rec.attempts, rec.outcome, rec.dropped, rec.cut_off) == (2, "repaired", {}, 0)
    assert rec.completion_tokens == len(HALF.split()) + len(str(SIX).split())


def test_a_reply_cut_again_is_kept_and_counted_cut_off() -> None:
    backend = ScriptedBackend([cut()] * 2)
    usage = MemoryUsageSink()
    got = ask(LLMClient(backend, usage=usage), max_tokens=300)
    assert [r.max_tokens for r in backend.requests] == [300, 600]  # asked again once
    assert [f.fact for f in got.facts] == ["Maya said fact number 0.", "Maya said fact number 1."]
    (rec,) = usage.records
    assert rec.attempts == 2 and rec.outcome == "repaired" and rec.dropped == {"cut_off": 1}
    summary = usage.summary()["s"]
    assert (summary["cut_off"], summary["truncated"], summary["calls"]) == (1, 1, 1)


def test_the_room_stops_at_the_models_output_limit() -> None:
    small = ScriptedBackend([cut(), cut()])
    ask(LLMClient(small), max_tokens=1500)
    assert [r.max_tokens for r in small.requests] == [1500, 2048]  # the small profile's limit
    at_limit = ScriptedBackend([cut()])
    usage = MemoryUsageSink()
    ask(LLMClient(at_limit, usage=usage), max_tokens=2048)  # no more room to give
    assert [r.max_tokens for r in at_limit.requests] == [2048]
    assert usage.records[0].cut_off == 1 and usage.records[0].attempts == 1


def test_the_limits_of_a_chat_model_give_more_room() -> None:
    backend = ScriptedBackend([cut(), SIX, cut(), cut()])
    chat = Budgets.of("chat", max_output_tokens=5000)
    client = LLMClient(backend, budgets=chat)
    assert len(ask(client, max_tokens=2000).facts) == 6
    assert len(ask(client, max_tokens=4000).facts) == 2
    assert [r.max_tokens for r in backend.requests] == [2000, 4000, 4000, 5000]


def test_the_clients_ceiling_and_the_context_left_bound_the_room() -> None:
    capped = ScriptedBackend([cut(), cut()])
    usage = MemoryUsageSink()
    ask(LLMClient(capped, usage=usage, max_tokens=400))  # llm.max_tokens
    assert [r.max_tokens for r in capped.requests] == [240, 400]
    assert usage.records[0].cut_off == 1
    crowded = ScriptedBackend([cut(prompt_tokens=3700), cut(prompt_tokens=3700)])
    ask(LLMClient(crowded))  # a 4,096-token window with a 3,700-token prompt
    assert [r.max_tokens for r in crowded.requests] == [240, 396]
    full = ScriptedBackend([cut(prompt_tokens=4000)])
    ask(LLMClient(full))  # no room left beside the prompt: kept as it is
    assert [r.max_tokens for r in full.requests] == [240]


def test_a_reply_cut_at_the_limit_that_still_parses_whole_is_counted_cut_off() -> None:
    whole_json = '{"facts": [{"fact": "Maya said fact number 0."}]}'
    usage = MemoryUsageSink()
    ask(LLMClient(ScriptedBackend([cut(whole_json)]), usage=usage), max_tokens=2048)
    assert usage.records[0].dropped == {"cut_off": 1}


def test_plain_text_is_asked_again_too() -> None:
    backend = ScriptedBackend([cut("Maya moved to Lisbon and"), "Maya moved to Lisbon and stayed."])
    usage = MemoryUsageSink()
    text = asyncio.run(LLMClient(backend, usage=usage).text(PROMPT, stage="t", max_tokens=16))
    assert text == "Maya moved to Lisbon and stayed."
    assert [r.max_tokens for r in backend.requests] == [16, 32]
    assert usage.records[0].cut_off == 0


def test_a_reply_with_nothing_usable_gets_more_room_before_it_is_told_to_be_shorter() -> None:
    backend = ScriptedBackend([cut('{"facts": [{"fact": "Maya'), SIX])
    assert len(ask(LLMClient(backend, max_retries=0)).facts) == 6
    assert [r.max_tokens for r in backend.requests] == [240, 480]


def test_reasoning_tokens_are_counted_apart() -> None:
    thought = Completion('{"facts": []}', 10, 50, "scripted", "stop", reasoning_tokens=46)
    usage = MemoryUsageSink()
    ask(LLMClient(ScriptedBackend([thought]), usage=usage))
    (rec,) = usage.records
    assert (rec.completion_tokens, rec.reasoning_tokens) == (50, 46)
    assert usage.summary()["s"]["reasoning_tokens"] == 46
