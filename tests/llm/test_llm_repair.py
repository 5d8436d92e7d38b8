"""parse_structured: repairs the usual damage in small-model output, or fails clearly."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from memstrata.llm import LLMOutputError, parse_structured, repair_json


class Names(BaseModel):
    names: list[str]
    count: int = 0


@pytest.mark.parametrize(
    ("text", "names", "count"),
    [
        ('{"names": ["a", "b"], "count": 2}', ["a", "b"], 2),
        ('```json\n{"names": ["a", "b"], "count": 2}\n```', ["a", "b"], 2),
        ('```\n{"names": ["a"]}\n```\nAnything else?', ["a"], 0),
        ('```json\n{"names": ["a"], "count": 1}', ["a"], 1),  # fence never closed
        ('Sure! Here is the JSON:\n{"names": ["x"], "count": 1}\nHope it helps.', ["x"], 1),
        ('Use {curly} braces like [this]: {"names": ["y"]} ok', ["y"], 0),
        ('{"names": ["a", "b",], "count": 2,}', ["a", "b"], 2),
        ('{"names": ["a", "b" , ] }', ["a", "b"], 0),
        ('{"names": ["alpha", "be', ["alpha"], 0),  # a half-written item is dropped
        ('{"names": ["a", "b",', ["a", "b"], 0),
        ('{"names": ["a"], "count": ', ["a"], 0),
        ('{"names": ["a"], "cou', ["a"], 0),
        ('{"names": ["line\nbreak"]}', ["line\nbreak"], 0),
        ('{"names": ["a, b]"], "count": 3}', ["a, b]"], 3),
    ],
)
def test_repairs(text: str, names: list[str], count: int) -> None:
    parsed = parse_structured(text, Names)
    assert parsed.names == names
    assert parsed.count == count


def test_repair_json_returns_plain_values() -> None:
    assert repair_json("result: [1, 2, 3,]") == [1, 2, 3]
    assert repair_json('{"a": {"b": [1') == {"a": {"b": [1]}}


def test_first_candidate_that_validates_wins() -> None:
    # The first bracket is valid JSON but the wrong shape; the object after it is right.
    text = 'Options [1, 2]. Answer: {"names": ["ok"]}'
    assert parse_structured(text, Names).names == ["ok"]


@pytest.mark.parametrize("garbage", ["", "I cannot help with that.", "}}}]]", "{{{{"])
def test_hopeless_garbage_raises_clear_error(garbage: str) -> None:
    with pytest.raises(LLMOutputError) as info:
        parse_structured(garbage, Names)
    assert "JSON" in str(info.value) or "Names" in str(info.value)
    assert info.value.raw_text == garbage


def test_wrong_shape_names_the_field() -> None:
    with pytest.raises(
        LLMOutputError, match=r"Names: the reply has none of the fields of Names \(names, count\)"
    ) as info:
        parse_structured('{"other": 1}', Names)
    assert info.value.raw_text == '{"other": 1}'


def test_long_output_is_handled_quickly() -> None:
    items = ", ".join(f'"n{i}"' for i in range(5000))
    text = '{"names": [' + items  # truncated, 5000 commas
    assert len(parse_structured(text, Names).names) == 5000
