"""JSON schemas that small models can follow, and tolerant parsing of what they return.

Grammar-constrained decoders (llama.cpp) cope badly with ``$ref`` and unbounded strings or
arrays: an unbounded field lets a 135M model ramble until ``max_tokens`` and truncate the
JSON. So schemas are inlined and bounded, and parsing repairs the usual damage (fences,
chatter, trailing commas, truncation) before pydantic has the last word.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any, TypeVar, cast, get_args

import annotated_types
from pydantic import BaseModel, Field, ValidationError, create_model

from memstrata.llm.salvage import Salvage, Unusable, salvage
from memstrata.llm.types import LLMOutputError

T = TypeVar("T", bound=BaseModel)

# Keys whose value is one sub-schema, a list of sub-schemas, or a name -> sub-schema map.
_SCHEMA_KEYS = ("items", "additionalProperties", "not", "contains", "propertyNames")
_SCHEMA_LIST_KEYS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAP_KEYS = ("properties", "patternProperties", "dependentSchemas")


# llama.cpp's grammar parser refuses a repetition of more than 1000 (``{0,1000}`` or the
# nested optionals llama-cpp-python emits), and llama-cpp-python then crashes in sampling.
GRAMMAR_REPEAT_LIMIT = 1000


def list_bounded(model: type[T], field: str, bound: int) -> type[T]:
    """``model`` with its list ``field`` holding at most ``bound`` items (at least one):
    a prompt that shows ``bound`` things to pick from, or allows that many, gets a schema
    that says so, and a grammar-constrained model closes the list there."""
    return cast(type[T], _list_bounded(model, field, bound))


def resized(model: type[T], bounds: Mapping[str, int]) -> type[T]:
    """``model`` with other ``max_length`` bounds: ``{"facts": 24}`` bounds its field
    ``facts``, ``{"facts.fact": 400}`` the field ``fact`` of that list's items. The
    class keeps its name and is a subclass, so code that names or checks it still does;
    a bound that does not change anything returns ``model`` itself. The budgets of a
    capable model (:mod:`memstrata.llm.budgets`) allow longer replies this way."""
    return cast(type[T], _resized(model, tuple(sorted(bounds.items()))))


@functools.cache
def _resized(model: type[BaseModel], bounds: tuple[tuple[str, int], ...]) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        inner = tuple((k.split(".", 1)[1], b) for k, b in bounds if k.startswith(name + "."))
        annotation = info.annotation
        if inner:
            (item,) = get_args(annotation)
            sized = _resized(item, inner)
            annotation = annotation if sized is item else list[sized]  # type: ignore[valid-type]
        own = dict(bounds).get(name, _max_length(info))
        if annotation is not info.annotation or own != _max_length(info):
            kept = [m for m in info.metadata if not isinstance(m, annotated_types.MaxLen)]
            typed = Annotated[(annotation, *kept)] if kept else annotation
            default = (
                {"default_factory": info.default_factory}
                if info.default_factory is not None
                else {"default": info.default}
            )
            fields[name] = (typed, Field(max_length=own, description=info.description, **default))
    if not fields:
        return model
    return create_model(model.__name__, __base__=model, **fields)


def _max_length(info: Any) -> int | None:
    return next((m.max_length for m in info.metadata if hasattr(m, "max_length")), None)


def list_reply_tokens(entries: Iterable[Any], base: int) -> int:
    """A completion budget for a JSON reply that may list every one of ``entries`` (each
    as the reply writes it): ``base`` for the rest of the reply, and per entry half a
    token per character of its JSON plus three for quotes and separators. A list the
    prompt lets the model fill must fit in the reply, or the cut brings back a top-k the
    prompt does not have. The bundled model writes a list of 20 nodes with UUIDs in 1,155
    tokens (2,371 characters) and a list of 30 short ids in 144."""
    return base + sum(len(json.dumps(e)) // 2 + 3 for e in entries)


@functools.cache
def _list_bounded(model: type[BaseModel], field: str, bound: int) -> type[BaseModel]:
    annotation = model.model_fields[field].annotation
    return create_model(
        f"{model.__name__}{bound}",
        __base__=model,
        **{field: (annotation, Field(default_factory=list, max_length=max(1, bound)))},  # type: ignore[call-overload]
    )


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


def parse_structured(text: str, model: type[T], repairs: Salvage | None = None) -> T:
    """Parse a model answer into ``model``, repairing common damage first.

    Candidates, in order: the text as is, the first fenced block, then every ``{``/``[``
    start (cut at its matching bracket, or closed if truncated) that does not lie inside
    a value already read: a fragment of a reply that breaks the schema is never taken for
    the answer. The first candidate :func:`~memstrata.llm.salvage.salvage` can keep
    something of wins, its repairs added to ``repairs``; otherwise ``LLMOutputError``
    carries the first problem found.
    """
    first_error: str | None = None
    for value, cut_off in _json_candidates(text):
        attempt = Salvage()
        try:
            parsed = salvage(value, model, attempt)
        except ValidationError as exc:
            first_error = first_error or format_validation_error(exc)
            continue
        except Unusable as exc:
            first_error = first_error or str(exc)
            continue
        if cut_off:
            if not _content_of(parsed):
                first_error = first_error or "the reply was cut off before its first item"
                continue
            attempt.reasons["cut_off"] += 1
        if repairs is not None:
            repairs.merge(attempt)
        return parsed
    if first_error is None:
        raise LLMOutputError(
            f"no JSON value found in model output ({len(text)} chars): {_excerpt(text)!r}",
            raw_text=text,
        )
    raise LLMOutputError(f"output does not match {model.__name__}: {first_error}", raw_text=text)


def _content_of(parsed: BaseModel) -> bool:
    return any(v not in (None, "", [], {}, False) for v in parsed.model_dump().values())


def repair_json(text: str) -> Any:
    """Return the first JSON value recoverable from ``text``; ``LLMOutputError`` if none."""
    for value, _cut in _json_candidates(text):
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


def _json_candidates(text: str) -> Iterator[tuple[Any, bool]]:
    """JSON values in ``text`` with whether each was cut off (closed by repair)."""
    seen: set[str] = set()

    def attempt(candidate: str) -> Any:
        if candidate in seen:
            return _NOTHING
        seen.add(candidate)
        try:
            return json.loads(candidate, strict=False)
        except ValueError:
            return _NOTHING

    stripped = text.strip()
    whole = attempt(stripped)
    if whole is not _NOTHING:
        yield whole, False
        return  # every other candidate would be a fragment of this value
    read: list[tuple[int, int]] = []  # spans of values already read, in ``stripped``
    fence = _FENCE.search(stripped)
    if fence is not None:
        value = attempt(fence.group(1).strip())
        if value is not _NOTHING:
            read.append(fence.span(1))
            yield value, False
    starts = [i for i, ch in enumerate(stripped) if ch in "{["][:_MAX_STARTS]
    for start in starts:
        if any(lo <= start < hi for lo, hi in read):
            continue
        for candidate, end, cut_off in _balanced_variants(stripped[start:]):
            value = attempt(candidate)
            if value is not _NOTHING:
                read.append((start, start + end))
                yield value, cut_off


_NOTHING = object()


def _balanced_variants(s: str) -> Iterator[tuple[str, int, bool]]:
    """Repaired versions of ``s`` (which starts with a bracket), best first, each with
    the length of ``s`` it covers and whether it was cut off (closed by repair).

    A string open at the cut is kept up to its last sentence end when it is a field's
    value (a summary cut at the token limit keeps its whole sentences), and dropped when
    it is a list item (a half-written name is not a name)."""
    closers = {"{": "}", "[": "]"}
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []  # (end position, closing suffix) of safe truncations
    in_string = escape = False
    string_start = 0
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
            string_start = i
        elif ch in closers:
            stack.append(closers[ch])
            cuts.append((i + 1, "".join(reversed(stack))))
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                return  # mismatched bracket: not JSON from this start
            stack.pop()
            if not stack:
                yield _drop_trailing_commas(s[: i + 1]), i + 1, False
                return
        elif ch == ",":
            cuts.append((i, "".join(reversed(stack))))
    closing = "".join(reversed(stack))
    if in_string:
        before = s[:string_start].rstrip()
        if before.endswith(":"):  # a field's value: keep its whole sentences
            body = s[string_start + 1 :]
            end = max(body.rfind(". "), body.rfind("! "), body.rfind("? "))
            if body.rstrip().endswith((".", "!", "?")):
                end = len(body.rstrip()) - 1
            if end > 0 and not body[:end].endswith("\\"):
                yield (
                    _drop_trailing_commas(s[: string_start + end + 2] + '"' + closing),
                    len(s),
                    True,
                )
    else:
        yield _drop_trailing_commas(s.rstrip().rstrip(",") + closing), len(s), True
    for end, suffix in reversed(cuts[-_MAX_CUTS:]):
        yield _drop_trailing_commas(s[:end].rstrip().rstrip(",") + suffix), len(s), True


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
