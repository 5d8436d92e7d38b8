"""Cost per stage: LLM calls, tokens, LLM latency, wall seconds and money.

Stages are phases of the run, not stage names of the designs (which the harness does not
know): ``ingestion`` (import and build), ``retrieval`` (search), ``answer`` and ``judge``.
LLM figures come from the store's call accounting, read before and after each phase of
a namespace; calls served from the response cache count as calls with no tokens. Money
uses ``[eval.prices]`` (per million tokens) for the model that made the calls; a model
without a price gets ``money = None``, never a guess.
"""

from __future__ import annotations

from typing import Any

from memstrata.config import Price

STAGES = ("ingestion", "retrieval", "answer", "judge")
FIELDS = ("calls", "cached", "failures", "prompt_tokens", "completion_tokens", "latency_ms")


def totals(usage: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Sum a per-stage usage table (``store.llm_usage`` or ``MemoryUsageSink.summary``)."""
    return {f: float(sum(s.get(f, 0) or 0 for s in usage.values())) for f in FIELDS}


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {f: after.get(f, 0.0) - before.get(f, 0.0) for f in FIELDS}


def money(entry: dict[str, float], model: str | None, prices: dict[str, Price]) -> float | None:
    if not entry.get("prompt_tokens") and not entry.get("completion_tokens"):
        return 0.0
    price = prices.get(model or "")
    if price is None:
        return None
    return round(
        (entry["prompt_tokens"] * price.prompt + entry["completion_tokens"] * price.completion)
        / 1e6,
        6,
    )


def share(entry: dict[str, Any], n: int) -> dict[str, Any]:
    """One of ``n`` even parts of a phase's cost row (a batch phase served ``n`` rows)."""
    part = {k: v for k, v in entry.items() if k in ("recipe", "sample", "stage")}
    n = max(n, 1)
    for f in (*FIELDS, "seconds"):
        part[f] = float(entry.get(f, 0.0) or 0.0) / n
    m = entry.get("money", 0.0)
    part["money"] = None if m is None else m / n
    return part


def add(into: dict[str, Any], entry: dict[str, Any]) -> None:
    """Accumulate one phase's cost row into a stage total (money None is sticky)."""
    for f in (*FIELDS, "seconds"):
        into[f] = into.get(f, 0.0) + float(entry.get(f, 0.0) or 0.0)
    if "money" not in into:
        into["money"] = 0.0
    if into["money"] is not None:
        m = entry.get("money", 0.0)
        into["money"] = None if m is None else into["money"] + m


def by_stage(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``rows`` of one recipe (``{"stage", ...}``) → per-stage totals, every stage present."""
    out: dict[str, dict[str, Any]] = {s: {} for s in STAGES}
    for row in rows:
        add(out.setdefault(row["stage"], {}), row)
    for entry in out.values():
        for f in (*FIELDS, "seconds"):
            entry[f] = round(entry.get(f, 0.0), 3)
        entry.setdefault("money", 0.0)
    return out
