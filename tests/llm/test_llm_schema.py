"""bounded_json_schema: refs inlined, arrays/strings bounded, objects closed."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from memstrata.llm import bounded_json_schema
from memstrata.llm.schema import GRAMMAR_REPEAT_LIMIT


class Leaf(BaseModel):
    tags: list[str]
    note: str = Field(max_length=10)
    kind: Literal["a", "b"]
    few: list[int] = Field(default_factory=list, max_length=3)
    essay: str = Field(default="", max_length=50_000)
    many: list[int] = Field(default_factory=list, min_length=2, max_length=10_000)


class Root(BaseModel):
    title: str
    leaves: list[Leaf]
    child: Leaf | None = None
    matrix: list[list[Annotated[str, Field(max_length=5)]]]
    scores: dict[str, float] = Field(default_factory=dict)


class Node(BaseModel):
    name: str
    children: list[Node] = Field(default_factory=list)


def _walk(node: Any) -> list[dict[str, Any]]:
    """Every dict in the schema, depth first."""
    if isinstance(node, dict):
        return [node] + [d for v in node.values() for d in _walk(v)]
    if isinstance(node, list):
        return [d for v in node for d in _walk(v)]
    return []


def _leaf_variant(child: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in child["anyOf"] if s.get("type") == "object")


def test_refs_are_inlined() -> None:
    schema = bounded_json_schema(Root)
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    leaf = schema["properties"]["leaves"]["items"]
    assert set(leaf["properties"]) == {"tags", "note", "kind", "few", "essay", "many"}
    assert set(_leaf_variant(schema["properties"]["child"])["properties"]) == set(
        leaf["properties"]
    )


def test_every_array_and_string_is_bounded() -> None:
    schema = bounded_json_schema(Root, max_items=7, max_string=99)
    for node in _walk(schema):
        if node.get("type") == "array":
            assert "maxItems" in node, node
        if node.get("type") == "string" and "enum" not in node and "const" not in node:
            assert "maxLength" in node, node
    props = schema["properties"]
    assert props["title"]["maxLength"] == 99
    assert props["leaves"]["maxItems"] == 7
    leaf = props["leaves"]["items"]["properties"]
    assert leaf["tags"]["maxItems"] == 7
    assert leaf["tags"]["items"]["maxLength"] == 99
    # bounds the model declares itself are kept
    assert leaf["note"]["maxLength"] == 10
    assert leaf["few"]["maxItems"] == 3
    # looser declared bounds are clamped (llama.cpp cannot compile huge repetitions)
    assert leaf["essay"]["maxLength"] == 99
    assert leaf["many"]["maxItems"] == 7 and leaf["many"]["minItems"] == 2
    # nested arrays
    assert props["matrix"]["maxItems"] == 7
    assert props["matrix"]["items"]["maxItems"] == 7
    assert props["matrix"]["items"]["items"]["maxLength"] == 5


def test_defaults_fit_llama_cpp_grammar_limit() -> None:
    schema = bounded_json_schema(Root)
    limits = [n.get(k, 0) for n in _walk(schema) for k in ("maxItems", "maxLength")]
    assert max(limits) == GRAMMAR_REPEAT_LIMIT


def test_lower_bound_wins_over_default_upper_bound() -> None:
    class Wide(BaseModel):
        codes: list[int] = Field(min_length=5)

    assert bounded_json_schema(Wide, max_items=3)["properties"]["codes"]["maxItems"] == 5


def test_objects_are_closed_and_fully_required() -> None:
    schema = bounded_json_schema(Root)
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"title", "leaves", "child", "matrix", "scores"}
    leaf = schema["properties"]["leaves"]["items"]
    assert leaf["additionalProperties"] is False
    assert _leaf_variant(schema["properties"]["child"])["additionalProperties"] is False
    assert not any("default" in node for node in _walk(schema))
    # a free-form mapping keeps its value schema instead of being closed
    assert schema["properties"]["scores"]["additionalProperties"] == {"type": "number"}


def test_recursive_model_is_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="recursive model 'Node'"):
        bounded_json_schema(Node)


def test_source_schema_is_not_mutated() -> None:
    before = json.dumps(Root.model_json_schema(), sort_keys=True)
    bounded_json_schema(Root)
    assert json.dumps(Root.model_json_schema(), sort_keys=True) == before
