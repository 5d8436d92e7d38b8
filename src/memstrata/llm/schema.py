"""JSON schemas that small models can follow, and tolerant parsing of what they return.

Grammar-constrained decoders (llama.cpp) cope badly with ``$ref`` and unbounded strings or
arrays: an unbounded field lets a 135M model ramble until ``max_tokens`` and truncate the
JSON. So schemas are inlined and bounded, and parsing repairs the usual damage (fences,
chatter, trailing commas, truncation) before pydantic has the last word.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memstrata.llm.types import LLMOutputError

T = TypeVar("T", bound=BaseModel)

# Keys whose value is one sub-schema, a list of sub-schemas, or a name -> sub-schema map.
_SCHEMA_KEYS = ("items", "additionalProperties", "not", "contains", "propertyNames")
_SCHEMA_LIST_KEYS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAP_KEYS = ("properties", "patternProperties", "dependentSchemas")


# llama.cpp's grammar parser refuses a repetition of more than 1000 (``{0,1000}`` or the
# nested optionals llama-cpp-python emits), and llama-cpp-python then crashes in sampling.
GRAMMAR_REPEAT_LIMIT = 1000


def bounded_json_schema(
    model: type[BaseModel], *, max_items: int = 64, max_string: int = GRAMMAR_REPEAT_LIMIT
) -> dict[str, Any]:
    """Return ``model``'s JSON schema with refs inlined and every array/string bounded.

    Bounds the model declares are kept when tighter and clamped otherwise (pydantic still
    enforces the model's own limits on the answer). Keep both bounds at or below
    ``GRAMMAR_REPEAT_LIMIT`` for llama.cpp backends.

    Objects with declared properties get ``additionalProperties: false`` and list every
    property as required (OpenAI strict mode demands both; grammars get shorter too), so
    ``default`` values are dropped: the model must write every field (``null`` included).
    Recursive models cannot be inlined and raise ``ValueError``.
    """
    schema = model.model_json_schema()
    defs: dict[str, Any] = schema.pop("$defs", {})
    return _bound(schema, defs, (), max_items, max_string)


def _bound(
    node: Any, defs: dict[str, Any], seen: tuple[str, ...], max_items: int, max_string: int
) -> Any:
    if not isinstance(node, dict):
        return node
    node = dict(node)
    ref = node.pop("$ref", None)
    if ref is not None:
        name = str(ref).rsplit("/", 1)[-1]
        if not str(ref).startswith("#/$defs/") or name not in defs:
            raise ValueError(f"cannot inline unsupported schema reference {ref!r}")
        if name in seen:
            raise ValueError(f"recursive model {name!r} cannot be inlined into a bounded schema")
        target = _bound(copy.deepcopy(defs[name]), defs, (*seen, name), max_items, max_string)
        node = {**target, **node}  # sibling keys (description, default) win
    rec = (defs, seen, max_items, max_string)
    for key in _SCHEMA_KEYS:
        if isinstance(node.get(key), dict):
            node[key] = _bound(node[key], *rec)
    for key in _SCHEMA_LIST_KEYS:
        if isinstance(node.get(key), list):
            node[key] = [_bound(sub, *rec) for sub in node[key]]
    for key in _SCHEMA_MAP_KEYS:
        if isinstance(node.get(key), dict):
            node[key] = {name: _bound(sub, *rec) for name, sub in node[key].items()}

    types = node.get("type")
    type_set = set(types) if isinstance(types, list) else {types}
    if "array" in type_set:
        node["maxItems"] = _clamp(node, "minItems", "maxItems", max_items)
    if "string" in type_set and "enum" not in node and "const" not in node:
        node["maxLength"] = _clamp(node, "minLength", "maxLength", max_string)
    if "object" in type_set and "properties" in node:
        node.setdefault("additionalProperties", False)
        node["required"] = list(node["properties"])
    node.pop("default", None)  # everything is required, and strict mode rejects odd defaults
    return node


def _clamp(node: dict[str, Any], low_key: str, high_key: str, bound: int) -> int:
    """The tighter of the declared and default upper bound, never below the lower bound."""
    high = min(int(node.get(high_key, bound)), bound)
    return max(high, int(node.get(low_key, 0)))


def parse_structured(text: str, model: type[T]) -> T:
    """Parse a model answer into ``model``, repairing common damage first.

    Tries, in order: the text as is, the first fenced block, then every ``{``/``[`` start
    (cut at its matching bracket, or closed if truncated). The first candidate that
    validates wins; otherwise ``LLMOutputError`` carries the first validation problem.
    """
    first_error: str | None = None
    for value in _json_candidates(text):
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            if first_error is None:
                first_error = format_validation_error(exc)
    if first_error is None:
        raise LLMOutputError(
            f"no JSON value found in model output ({len(text)} chars): {_excerpt(text)!r}",
            raw_text=text,
        )
    raise LLMOutputError(f"output does not match {model.__name__}: {first_error}", raw_text=text)


def repair_json(text: str) -> Any:
    """Return the first JSON value recoverable from ``text``; ``LLMOutputError`` if none."""
    for value in _json_candidates(text):
        return value
    raise LLMOutputError(f"no JSON value found in: {_excerpt(text)!r}", raw_text=text)


def format_validation_error(exc: ValidationError, limit: int = 8) -> str:
    """Compact ``loc: msg`` list; short enough to quote back to a small model."""
    parts = []
    for err in exc.errors(include_url=False)[:limit]:
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        parts.append(f"{loc}: {err['msg']}")
    more = exc.error_count() - limit
    if more > 0:
        parts.append(f"(+{more} more)")
    return "; ".join(parts)


_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)(?:```|\Z)", re.S)
_MAX_STARTS = 16
_MAX_CUTS = 64


def _json_candidates(text: str) -> Iterator[Any]:
    seen: set[str] = set()

    def attempt(candidate: str) -> Iterator[Any]:
        if candidate in seen:
            return
        seen.add(candidate)
        try:
            yield json.loads(candidate, strict=False)
        except ValueError:
            return

    stripped = text.strip()
    yield from attempt(stripped)
    sources = [m.group(1).strip() for m in _FENCE.finditer(stripped)][:1] + [stripped]
    for source in sources:
        yield from attempt(source)
        starts = [i for i, ch in enumerate(source) if ch in "{["][:_MAX_STARTS]
        for start in starts:
            for candidate in _balanced_variants(source[start:]):
                yield from attempt(candidate)


def _balanced_variants(s: str) -> Iterator[str]:
    """Yield repaired versions of ``s`` (which starts with a bracket), best first."""
    closers = {"{": "}", "[": "]"}
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []  # (end position, closing suffix) of safe truncations
    in_string = escape = False
    for i, ch in enumerate(s):
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in closers:
            stack.append(closers[ch])
            cuts.append((i + 1, "".join(reversed(stack))))
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                return  # mismatched bracket: not JSON from this start
            stack.pop()
            if not stack:
                yield _drop_trailing_commas(s[: i + 1])
                return
        elif ch == ",":
            cuts.append((i, "".join(reversed(stack))))
    # Truncated answer: close the open string and brackets, else back off to a safe cut.
    tail = s
    if in_string:
        tail = (tail[:-1] if escape else tail) + '"'
    tail = tail.rstrip().rstrip(",")
    yield _drop_trailing_commas(tail + "".join(reversed(stack)))
    for end, suffix in reversed(cuts[-_MAX_CUTS:]):
        yield _drop_trailing_commas(s[:end].rstrip().rstrip(",") + suffix)


def _drop_trailing_commas(s: str) -> str:
    """Remove commas directly before a closing bracket, outside strings."""
    out: list[str] = []
    in_string = escape = False
    n = len(s)
    for i, ch in enumerate(s):
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == ",":
            j = i + 1
            while j < n and s[j].isspace():
                j += 1
            if j < n and s[j] in "}]":
                continue
        out.append(ch)
    return "".join(out)


def _excerpt(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
