"""Cost per stage: money from the price table, none without a price, totals per stage."""

from __future__ import annotations

import pytest

from memstrata.config import Config, Price
from memstrata.errors import ConfigError
from memstrata.eval.qa import cost


def test_money_per_million_tokens_and_none_without_a_price() -> None:
    prices = {"m": Price(prompt=2.0, completion=8.0)}
    entry = {"prompt_tokens": 1500.0, "completion_tokens": 250.0}
    assert cost.money(entry, "m", prices) == pytest.approx((1500 * 2 + 250 * 8) / 1e6)
    assert cost.money(entry, "unpriced", prices) is None
    # nothing spent (cached calls, or no LLM) costs nothing, priced or not
    assert cost.money({"prompt_tokens": 0.0, "completion_tokens": 0.0}, None, {}) == 0.0


def test_stage_totals_keep_an_unknown_price_visible() -> None:
    rows = [
        {"stage": "answer", "calls": 2, "prompt_tokens": 10, "seconds": 1.5, "money": 0.25},
        {"stage": "answer", "calls": 1, "prompt_tokens": 5, "seconds": 0.5, "money": 0.5},
        {"stage": "judge", "calls": 1, "prompt_tokens": 7, "seconds": 0.1, "money": None},
        {"stage": "judge", "calls": 1, "prompt_tokens": 7, "seconds": 0.1, "money": 0.1},
    ]
    totals = cost.by_stage(rows)
    assert set(totals) == {"ingestion", "retrieval", "answer", "judge"}
    assert totals["answer"]["calls"] == 3 and totals["answer"]["prompt_tokens"] == 15
    assert totals["answer"]["seconds"] == 2.0 and totals["answer"]["money"] == 0.75
    assert totals["judge"]["money"] is None  # one unpriced phase: the total is unknown
    assert totals["ingestion"]["calls"] == 0 and totals["ingestion"]["money"] == 0.0


def test_usage_deltas() -> None:
    before = cost.totals({"a": {"calls": 2, "prompt_tokens": 10}})
    after = cost.totals({"a": {"calls": 3, "prompt_tokens": 25}, "b": {"calls": 1}})
    d = cost.delta(before, after)
    assert d["calls"] == 2 and d["prompt_tokens"] == 15 and d["completion_tokens"] == 0


def test_price_table_in_the_configuration() -> None:
    cfg = Config.load(env={}, **{"eval.prices": {"gpt-x": {"prompt": 0.15, "completion": 0.6}}})
    assert cfg.eval.prices["gpt-x"].completion == 0.6
    assert cfg.eval.judge is None and cfg.eval.currency == "USD"
    with pytest.raises(ConfigError, match="eval.prices.gpt-x.promt"):
        Config.load(env={}, **{"eval.prices": {"gpt-x": {"promt": 1.0}}})
    judged = Config.load(env={}, **{"eval.judge": {"kind": "gguf"}})
    assert judged.eval.judge is not None and judged.eval.judge.kind == "gguf"


def test_share_splits_a_batch_phase_evenly_and_keeps_unknown_money_unknown() -> None:
    entry = {
        "recipe": "rag",
        "sample": "s",
        "stage": "ingestion",
        "calls": 6.0,
        "prompt_tokens": 90.0,
        "seconds": 3.0,
        "money": 0.3,
        "turns": 40,
    }
    part = cost.share(entry, 3)
    assert part["recipe"] == "rag" and part["stage"] == "ingestion" and "turns" not in part
    assert part["calls"] == 2.0 and part["prompt_tokens"] == 30.0 and part["seconds"] == 1.0
    assert part["money"] == pytest.approx(0.1)
    total: dict = {}
    for _ in range(3):
        cost.add(total, part)
    assert total["calls"] == 6.0 and total["money"] == pytest.approx(0.3)
    assert cost.share({**entry, "money": None}, 2)["money"] is None
    assert cost.share(entry, 0)["calls"] == 6.0  # a phase that served no row stays whole
