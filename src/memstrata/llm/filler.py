"""A stand-in model that answers any JSON schema with a valid reply made of the prompt's
own words, so every LLM stage of every design can be driven without a model.

It is an instrument, not a model: what it says is arbitrary (a random window of the
prompt's words, small integers, the first enum value or another), but it is always
well-formed and within the schema's bounds, and it depends only on the seed and the
request. Wrapped in :class:`~memstrata.llm.chaos.ChaosBackend`, it shows what each design
does with every kind of damaged reply, fast enough for the test suite; ``memstrata bench
chaos --inner gguf`` does the same with the bundled model.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from memstrata.llm.types import Completion, Message


class SchemaFiller:
    """``complete`` returns JSON valid against ``json_schema`` (plain words without one)."""

    name = "filler"
    model = "schema-filler"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.calls = 0

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
    ) -> Completion:
        self.calls += 1
        prompt = "\n".join(m.content for m in messages)
        digest = hashlib.sha256(f"{self.seed}\n{prompt}".encode()).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        # Whitespace tokens, so that a window of them is a verbatim quote of the prompt
        # (designs that locate quotes in the text find some).
        words = (messages[-1].content if messages else "").split() or ["nothing"]
        if json_schema is None:
            text = " ".join(_window(rng, words, 12)) + "."
        else:
            text = json.dumps(_fill(json_schema, rng, words), ensure_ascii=False)
        return Completion(text, len(prompt.split()), len(text.split()), self.model, "stop")


def _window(rng: random.Random, words: list[str], most: int) -> list[str]:
    n = rng.randint(1, min(most, len(words)))
    start = rng.randrange(0, len(words) - n + 1)
    return words[start : start + n]


def _fill(schema: dict[str, Any], rng: random.Random, words: list[str]) -> Any:
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return _fill(rng.choice(options), rng, words)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _fill(sub, rng, words) for name, sub in props.items()}
    if kind == "array":
        low = int(schema.get("minItems", 0))
        high = max(low, min(int(schema.get("maxItems", 3)), 3))
        count = rng.randint(min(max(low, 1), high), high)  # mostly something to work on
        return [_fill(schema.get("items", {}), rng, words) for _ in range(count)]
    if kind == "string":
        bound = int(schema.get("maxLength", 200))
        return " ".join(_window(rng, words, 6))[:bound]
    if kind == "integer":
        return rng.randint(max(int(schema.get("minimum", -1)), -1), int(schema.get("maximum", 3)))
    if kind == "number":
        least, most = float(schema.get("minimum", 0)), float(schema.get("maximum", 10))
        return round(rng.uniform(least, most), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    return None
