"""Every design's llm tier through replies damaged on purpose: each call kept, repaired
or failed, each episode built or failed (then built by ``retry``), none lost.

The inner model is the schema filler (always valid replies made of the prompt's words),
so what goes wrong is only what the chaos backend does; ``memstrata bench chaos`` runs
the same with more turns, seeds and the bundled GGUF model.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from memstrata.eval import chaos
from memstrata.llm.filler import SchemaFiller

TURNS = 12
# MemTree calls the LLM only for the ancestors of an insertion that descends: 12 turns
# make about five calls, too few for the faults to be sure to land on one they damage.
TURNS_OF = {"memtree": 24}


def run(tmp_path: Path, embedder: Any, design: str, **kw: Any) -> dict[str, Any]:
    return asyncio.run(
        chaos.run_design(
            design,
            chaos.conversation(TURNS_OF.get(design, TURNS)),
            chaos.QUESTIONS,
            SchemaFiller(seed=3),
            path=tmp_path / f"{design}.db",
            embedder=embedder,
            **kw,
        )
    )


def check_accounts(r: dict[str, Any]) -> None:
    assert r["calls"] > 0 and sum(r["faults_injected"].values()) > 0
    assert r["kept"] + r["repaired"] + r["failures"] == r["calls"]
    for stage, row in r["stages"].items():  # per stage too
        assert row["kept"] + row["repaired"] + row["failures"] == row["calls"], stage
    a = r["after_chaos"]
    assert a["lost"] == 0 and a["queued"] == 0
    assert a["done"] + a["failed"] + a["dead"] == r["episodes"] * _builders(r)
    b = r["after_retry"]
    assert (b["done"], b["lost"], b["failed"] + b["dead"]) == (r["episodes"] * _builders(r), 0, 0)
    assert r["answers"] + r["answers_failed"] == len(chaos.QUESTIONS)


def _builders(r: dict[str, Any]) -> int:
    return 1  # every design recipe has one builder


@pytest.mark.parametrize("design", chaos.DESIGNS)
def test_every_fault_kind(tmp_path: Path, embedder: Any, design: str) -> None:
    r = run(tmp_path, embedder, design, seed=1, rate=0.6)
    check_accounts(r)
    assert r["repaired"] > 0  # damage was repaired, not only passed through


@pytest.mark.parametrize("design", chaos.DESIGNS)
def test_unusable_replies_fail_episodes_that_retry_builds(
    tmp_path: Path, embedder: Any, design: str
) -> None:
    # every reply damaged: a cut one is asked again with more room, and at a lower rate
    # that second reply often comes back whole (PersonalAI then fails no episode)
    r = run(tmp_path, embedder, design, seed=2, rate=1.0, faults=["empty", "truncated"])
    check_accounts(r)
    assert r["failures"] > 0 and r["after_chaos"]["failed"] + r["after_chaos"]["dead"] > 0
    assert r["retried"] == r["after_chaos"]["failed"] + r["after_chaos"]["dead"]
