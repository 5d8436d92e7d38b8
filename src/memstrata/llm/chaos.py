"""A backend that damages another backend's replies on purpose, reproducibly.

Real models over-fill lists, wrap JSON in chatter, cut off at ``max_tokens``, and real
servers time out. ``ChaosBackend`` makes those failures happen on demand, from a seed,
so the parsing, repair and retry paths can be exercised end to end (``llm.kind =
"chaos"``) and a failure seen once can be replayed.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from memstrata.llm.base import LLMBackend, context_tokens
from memstrata.llm.types import Completion, LLMBackendError, Message

#: every fault, in the order the random choice sees them
FAULTS = tuple(
    "over_bound prose fence wrong_type unknown_enum truncated length empty slow timeout".split()
)
#: faults that need no JSON in the reply
TEXT_FAULTS = frozenset("prose truncated length empty slow timeout".split())

_PROSE = (
    ("Sure! Here is the JSON:\n", "\nHope this helps."),
    ("Of course. ", "\n\nLet me know if you need anything else!"),
)

# A place in the parsed reply: ``holder[key]`` is the value, ``schema`` describes it.
_Site = tuple[Any, Any, dict[str, Any]]


def check_faults(faults: Sequence[str] | None) -> tuple[str, ...]:
    """The fault names to use (all of them for None); unknown names are a ``ValueError``."""
    if faults is None:
        return FAULTS
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        raise ValueError(f"unknown chaos fault(s) {unknown}; expected some of {list(FAULTS)}")
    if not faults:
        raise ValueError("chaos faults is empty; leave it unset for every fault")
    return tuple(dict.fromkeys(faults))


class ChaosBackend:
    """Wraps ``inner``; with probability ``rate`` a reply gets one fault, picked among those
    that fit it. The random stream depends only on the calls made and the inner replies,
    so the same seed and the same sequence of calls damage the same replies the same way.

    ``injected`` counts the faults applied, ``sent`` the replies returned.
    """

    name = "chaos"

    def __init__(
        self,
        inner: LLMBackend,
        *,
        seed: int,
        rate: float = 0.5,
        faults: Sequence[str] | None = None,
        slow_s: float = 0.05,
        timeout_s: float = 0.1,
    ) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"chaos rate must be within [0, 1], got {rate}")
        self.inner = inner
        self.model = inner.model
        self.context_tokens = context_tokens(inner)
        self.seed = seed
        self.rate = rate
        self.faults = check_faults(faults)
        self.slow_s = slow_s
        self.timeout_s = timeout_s
        self.injected: Counter[str] = Counter()
        self.sent = 0
        self._rng = random.Random(seed)

    def __repr__(self) -> str:
        return f"ChaosBackend({self.inner!r}, seed={self.seed}, rate={self.rate})"

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
    ) -> Completion:
        done = await self.inner.complete(
            messages, json_schema=json_schema, max_tokens=max_tokens, temperature=temperature
        )
        # Every random draw happens here, between two awaits, so concurrent calls cannot
        # interleave their draws.
        fault, damaged = self._damage(done, json_schema or {})
        if fault is not None:
            self.injected[fault] += 1
        if fault == "timeout":
            # both shapes a real timeout takes: the asyncio one and the HTTP client's
            as_builtin = self._rng.random() < 0.5
            await asyncio.sleep(self.timeout_s)
            if as_builtin:
                raise TimeoutError(f"chaos: no reply within {self.timeout_s}s")
            raise LLMBackendError(f"chaos: timeout after {self.timeout_s}s", retryable=True)
        if fault == "slow":
            await asyncio.sleep(self.slow_s)
        self.sent += 1
        return damaged

    async def aclose(self) -> None:
        """Close the inner backend's connections, if it keeps any."""
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()

    def _damage(self, done: Completion, schema: dict[str, Any]) -> tuple[str | None, Completion]:
        """Pick a fault for this reply (or none) and apply it."""
        if self._rng.random() >= self.rate:
            return None, done
        text = done.text
        try:
            data: Any = json.loads(text)
            parsed = True
        except ValueError:
            data, parsed = None, False
        fits = [f for f in self.faults if self._fits(f, text, data, parsed, schema)]
        if not fits:
            return None, done
        fault = self._rng.choice(fits)
        rng = self._rng
        if fault == "prose":
            before, after = rng.choice(_PROSE)
            return fault, replace(done, text=before + text + after)
        if fault == "fence":
            return fault, replace(done, text=f"```json\n{text}\n```")
        if fault in ("truncated", "length"):
            tail = rng.randint(1, min(len(text) - 1, max(1, len(text) // 10)))  # last tenth
            cut = rng.randrange(1, len(text)) if fault == "truncated" else len(text) - tail
            return fault, replace(done, text=text[:cut], finish_reason="length")
        if fault == "empty":
            return fault, replace(done, text="", completion_tokens=0)
        if fault in ("slow", "timeout"):
            return fault, done
        holder = [data]
        parent, key, sub = rng.choice(_targets(fault, holder, schema))
        if fault == "over_bound":
            self._over_bound(parent[key], int(sub["maxItems"]))
        elif fault == "wrong_type":
            self._wrong_type(parent, key)
        else:
            parent[key] = _outside(sub["enum"], rng.randrange(1000))
        return fault, replace(done, text=json.dumps(holder[0], ensure_ascii=False))

    def _fits(self, fault: str, text: str, data: Any, parsed: bool, schema: dict[str, Any]) -> bool:
        if fault in ("truncated", "length"):
            return len(text) >= 2
        if fault in TEXT_FAULTS:
            return True
        return parsed and (fault == "fence" or bool(_targets(fault, [data], schema)))

    def _over_bound(self, items: list[Any], bound: int) -> None:
        """Grow the list past ``maxItems`` with copies of its own items, slightly changed."""
        for n in range(max(bound - len(items), 0) + self._rng.randint(1, 3)):
            items.append(_perturb(self._rng.choice(items), n + 2))

    def _wrong_type(self, parent: Any, key: Any) -> None:
        """A string becomes a number or a list; in a list an item becomes a string, or a
        list of strings becomes one string."""
        value = parent[key]
        if isinstance(value, str):
            parent[key] = self._rng.choice([len(value), [value]])
        elif value and not all(isinstance(v, str) for v in value):
            i = self._rng.randrange(len(value))
            value[i] = json.dumps(value[i])
        else:
            parent[key] = ", ".join(value)


def _sites(parent: Any, key: Any, schema: dict[str, Any]) -> Iterator[_Site]:
    """Every value in the reply with the schema that describes it (``anyOf`` resolved
    by the value's type), depth first."""
    value = parent[key]
    schema = _branch(schema, value)
    yield parent, key, schema
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for name in value:
            yield from _sites(value, name, props.get(name) or {})
    elif isinstance(value, list):
        item = schema.get("items")
        item = item if isinstance(item, dict) else {}
        for i in range(len(value)):
            yield from _sites(value, i, item)


_TYPE_NAMES = "boolean integer number string array object null".split()
_JSON_TYPES = dict(zip((bool, int, float, str, list, dict, type(None)), _TYPE_NAMES, strict=True))


def _branch(schema: dict[str, Any], value: Any) -> dict[str, Any]:
    """The ``anyOf`` option whose ``type`` fits ``value`` (``X | None`` fields)."""
    kind = _JSON_TYPES.get(type(value))
    for option in schema.get("anyOf") or []:
        types = option.get("type") if isinstance(option, dict) else None
        allowed = set(types) if isinstance(types, list) else {types}
        if kind in allowed or (kind == "integer" and "number" in allowed):
            return dict(option)
    return schema


def _targets(fault: str, holder: list[Any], schema: dict[str, Any]) -> list[_Site]:
    """The places in ``holder[0]`` that ``fault`` can damage."""
    found = []
    for parent, key, sub in _sites(holder, 0, schema):
        value = parent[key]
        if fault == "over_bound":
            fits = isinstance(value, list) and bool(value) and isinstance(sub.get("maxItems"), int)
        elif fault == "wrong_type":
            fits = parent is not holder and (
                isinstance(value, str) or bool(value) and isinstance(value, list)
            )
        else:
            fits = isinstance(sub.get("enum"), list)
        if fits:
            found.append((parent, key, sub))
    return found


def _outside(enum: list[Any], n: int) -> str:
    """A value that looks plausible but is not one of ``enum``."""
    value = f"other_{n}"
    while value in enum:
        value += "_"
    return value


def _perturb(item: Any, n: int) -> Any:
    """A near-duplicate: the first string in ``item`` gets `` n`` appended."""
    if isinstance(item, str):
        return f"{item} {n}"
    if isinstance(item, dict):
        key = next((k for k, v in item.items() if isinstance(v, str)), None)
        return item if key is None else {**item, key: f"{item[key]} {n}"}
    return item
