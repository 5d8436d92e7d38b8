"""The lazy grammar sampler against llama-cpp-python's own, on the bundled SmolLM2 model:
the same greedy replies, with less of the vocabulary tested."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from memstrata.llm import GGUFBackend, Message, gguf_sampling
from memstrata.llm.schema import bounded_json_schema

pytestmark = pytest.mark.slow


class Person(BaseModel):
    name: Annotated[str, Field(max_length=24)]
    #: words the model would not write unprompted: its best token is often refused here
    kind: Literal["zyxwvut", "qpqpqp"]


class People(BaseModel):
    people: list[Person] = Field(max_length=3)


PROMPTS = [
    "Maya works at Acme in Lisbon. She met Tom in Paris.",
    "Tom divorced Ana. Tom is married to Eva now.",
]


def _messages(text: str) -> list[Message]:
    return [
        Message(role="system", content="You reply with JSON only."),
        Message(role="user", content=f"List the people of this text: {text}"),
    ]


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[GGUFBackend, GGUFBackend]]:
    stock = GGUFBackend(n_ctx=1024, n_threads=1, lazy_grammar=False)
    lazy = GGUFBackend(n_ctx=1024, n_threads=1)
    yield stock, lazy
    stock.close()
    lazy.close()


def _replies(backend: GGUFBackend, temperature: float = 0.0) -> list[tuple[str, int]]:
    schema = bounded_json_schema(People)
    out = []
    for text in PROMPTS:
        c = asyncio.run(
            backend.complete(
                _messages(text), json_schema=schema, max_tokens=48, temperature=temperature
            )
        )
        out.append((c.text, c.completion_tokens))
    return out


def test_the_lazy_sampler_gives_the_same_replies_testing_less(
    pair: tuple[GGUFBackend, GGUFBackend],
) -> None:
    stock, lazy = pair
    before = (lazy.grammar_steps, lazy.grammar_refused, lazy.grammar_full_passes)
    replies = _replies(lazy)
    assert replies == _replies(stock)
    assert all(text.lstrip().startswith("{") for text, _ in replies)
    steps, refused, full = (
        now - then
        for now, then in zip(
            (lazy.grammar_steps, lazy.grammar_refused, lazy.grammar_full_passes),
            before,
            strict=True,
        )
    )
    # every reply token was chosen by the lazy sampler (and the end of a finished reply)
    assert sum(n for _, n in replies) <= steps <= sum(n + 1 for _, n in replies)
    # the enum's words made the grammar refuse the model's best token, and the model's
    # next best tokens answered at least some of those steps
    assert 0 < refused < steps and full < refused
    assert stock.grammar_steps == 0  # llama-cpp-python's sampler did the other run


def test_a_refused_best_token_falls_back_to_the_whole_vocabulary(
    pair: tuple[GGUFBackend, GGUFBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a shortlist of one (the refused token itself), every refusal is a pass over
    the whole vocabulary; the replies stay those of llama-cpp-python's sampler."""
    stock, lazy = pair
    monkeypatch.setattr(gguf_sampling, "SHORTLIST", 1)
    before = lazy.grammar_full_passes
    assert _replies(lazy) == _replies(stock)
    assert lazy.grammar_full_passes > before


def test_sampling_at_a_temperature_keeps_llama_cpp_pythons_sampler(
    pair: tuple[GGUFBackend, GGUFBackend],
) -> None:
    _, lazy = pair
    before = lazy.grammar_steps
    replies = _replies(lazy, temperature=0.7)
    assert all(n > 0 for _, n in replies)
    assert lazy.grammar_steps == before
