"""Keeping every good item of a reply that breaks its schema, and counting what was not.

Models that are not grammar-constrained (a hosted API, vLLM, Ollama without a schema)
write a seventh fact where six are allowed, a node type outside the vocabulary, or a
summary a few characters over its bound. Rejecting the whole reply for one such item
loses the good ones; accepting a fragment that happens to validate (an inner ``{...}``
against a model whose fields all have defaults) invents an empty answer. Salvage does
neither: a list over its bound is cut to the bound, a string over its bound is cut at a
sentence or word end, an item that breaks the schema is dropped, and each of these is
counted by reason. A reply that keeps nothing of what it said is not usable, and the
caller treats it as a failed call.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

#: reasons whose items were kept in part (cut to a bound); every other reason drops them
TRUNCATING = frozenset({"over_bound", "long_string", "cut_off"})
_MAX_ROUNDS = 64


@dataclass
class Salvage:
    """What repairing one reply cost: items and strings cut to a bound, items dropped."""

    reasons: Counter[str] = field(default_factory=Counter)

    @property
    def truncated(self) -> int:
        return split(self.reasons)[0]

    @property
    def rejected(self) -> int:
        return split(self.reasons)[1]

    @property
    def repaired(self) -> bool:
        return bool(self.reasons)

    def merge(self, other: Salvage) -> None:
        self.reasons.update(other.reasons)


def split(reasons: Mapping[str, int]) -> tuple[int, int]:
    """(items cut to a bound, items dropped) among counts by reason."""
    truncated = sum(n for r, n in reasons.items() if r in TRUNCATING)
    return truncated, sum(reasons.values()) - truncated


class Unusable(ValueError):
    """Nothing of the reply survives: the message says why, to quote back to the model."""


def salvage(value: Any, model: type[T], repairs: Salvage) -> T:
    """Validate ``value`` against ``model``, repairing it item by item; raise ``Unusable``
    (or the last ``ValidationError``) when nothing the reply said can be kept."""
    value = _shape(value, model, repairs)
    known = set(model.model_fields) | {f.alias for f in model.model_fields.values() if f.alias}
    if isinstance(value, dict) and known and not known & set(value):
        fields = ", ".join(model.model_fields)
        raise Unusable(f"the reply has none of the fields of {model.__name__} ({fields})")

    def said(value: Any) -> int:  # what the reply says in the model's own fields
        if isinstance(value, dict):
            return sum(_content(v) for k, v in value.items() if k in known)
        return _content(value)

    before = said(value)
    for _ in range(_MAX_ROUNDS):
        try:
            result = model.model_validate(value)
        except ValidationError as exc:
            if not _repair(value, exc, repairs):
                raise
            continue
        if repairs.repaired and before and not said(value):
            raise Unusable(f"every item of the reply broke the schema ({_reasons(repairs)})")
        return result
    raise Unusable(f"the reply needs more than {_MAX_ROUNDS} repairs")


def _shape(value: Any, model: type[BaseModel], repairs: Salvage) -> Any:
    """A bare list answers a model with one list field: wrap it (not counted as loss)."""
    if isinstance(value, list):
        lists = [n for n, f in model.model_fields.items() if _is_list(f.annotation)]
        if len(lists) == 1:
            return {lists[0]: value}
    return value


def _is_list(annotation: Any) -> bool:
    return getattr(annotation, "__origin__", None) is list or annotation is list


def _content(value: Any) -> int:
    """How much the reply says: list items and non-empty scalars, counted shallowly."""
    if isinstance(value, dict):
        return sum(_content(v) for v in value.values())
    if isinstance(value, list):
        return len(value)
    return 0 if value in (None, "", False) else 1


def _reasons(repairs: Salvage) -> str:
    return ", ".join(f"{r} {n}" for r, n in sorted(repairs.reasons.items()))


def _repair(value: Any, exc: ValidationError, repairs: Salvage) -> bool:
    """Apply one fix per distinct location in ``exc``; False when none applies."""
    fixed = False
    done: set[tuple[Any, ...]] = set()
    # Deepest first, and later list indexes before earlier ones, so that dropping an
    # item does not shift the index of another error in the same list.
    errors = sorted(exc.errors(include_url=False), key=lambda e: _order(e["loc"]), reverse=True)
    for err in errors:
        loc = tuple(err["loc"])
        if any(loc[: len(d)] == d for d in done):
            continue
        step = _fix(value, loc, err, repairs)
        if step is not None:
            done.add(step)
            fixed = True
    return fixed


def _order(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((1, p) if isinstance(p, int) else (0, str(p)) for p in loc)


def _fix(value: Any, loc: tuple[Any, ...], err: Any, repairs: Salvage) -> tuple[Any, ...] | None:
    """Repair the value at ``loc``; returns the location fixed, or None if it cannot be."""
    target = _at(value, loc)
    kind = err["type"]
    if kind == "too_long" and isinstance(target, list):
        bound = int(err.get("ctx", {}).get("max_length", len(target)))
        repairs.reasons["over_bound"] += len(target) - bound
        del target[bound:]
        return loc
    if kind == "string_too_long" and isinstance(target, str) and loc:
        bound = int(err.get("ctx", {}).get("max_length", len(target)))
        parent = _at(value, loc[:-1])
        parent[loc[-1]] = shorten(target, bound)
        repairs.reasons["long_string"] += 1
        return loc
    # Drop the smallest list item that holds the error.
    for depth in range(len(loc) - 1, -1, -1):
        if isinstance(loc[depth], int):
            holder = _at(value, loc[:depth])
            if isinstance(holder, list) and 0 <= loc[depth] < len(holder):
                del holder[loc[depth]]
                repairs.reasons[_reason(kind)] += 1
                return loc[: depth + 1]
            return None
    # A wrong top-level field with a default is dropped, so the default stands.
    if len(loc) == 1 and isinstance(value, dict) and loc[0] in value and kind != "missing":
        del value[loc[0]]
        repairs.reasons[_reason(kind)] += 1
        return loc
    return None


def _reason(kind: str) -> str:
    if kind.startswith(("literal", "enum")):
        return "unknown_value"
    if kind == "missing":
        return "missing_field"
    return "wrong_type" if kind.endswith(("_type", "_parsing")) else kind


def _at(value: Any, loc: tuple[Any, ...]) -> Any:
    for part in loc:
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def shorten(text: str, bound: int) -> str:
    """``text`` cut to ``bound`` characters at its last sentence end, else at a word end."""
    if len(text) <= bound:
        return text
    head = text[:bound]
    end = max(head.rfind(". "), head.rfind("! "), head.rfind("? "))
    if head.endswith((".", "!", "?")):
        end = len(head) - 1
    if end >= bound * 0.4:
        return head[: end + 1]
    space = head.rfind(" ")
    return (head[:space] if space >= bound * 0.4 else head).rstrip(" ,;:")
