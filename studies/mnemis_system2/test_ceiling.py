"""The System-2 ceiling benchmark: its reach and ceiling beside what the fusion makes of it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memstrata.memory import AsyncMemory
from studies.mnemis_system2 import ceiling as bench_selection

DATA = Path(__file__).parents[2] / "tests" / "data" / "tiny_locomo.json"


def _run(tmp_path: Path, embedder, recipes: list[str]) -> dict:
    async def go() -> dict:
        memory = await AsyncMemory.open(tmp_path / "m.db", embedder=embedder)
        try:
            return await bench_selection.run(memory, DATA, recipes)
        finally:
            await memory.close()

    return asyncio.run(go())


def test_ceiling_bounds_system1_and_the_ablation_is_system1(tmp_path: Path, embedder) -> None:
    report = _run(tmp_path, embedder, ["mnemis", "mnemis-no-s2"])
    assert report["questions"] == 6 and report["system1"] == "mnemis-no-s2"
    assert report["recipes"]["mnemis"]["selection"]["hub_share"] == 0.1
    assert report["recipes"]["mnemis-no-s2"]["system2"] is False
    for entry in report["recipes"].values():
        for group in entry["groups"].values():
            assert 0.0 <= group["system1"] <= group["ceiling"] <= 1.0
            assert group["episodes_median"] >= 0
            # Two conversations: each is ranked by a model fitted on the other one.
            assert group["learned"] is not None and 0.0 <= group["learned"] <= 1.0
    # Without System-2 nothing is reached, so the ceiling is System-1 itself.
    for group in report["recipes"]["mnemis-no-s2"]["groups"].values():
        assert group["ceiling"] == group["system1"] and group["episodes_median"] == 0
    # Without System-2 the recipe's own ranking is System-1's, question by question.
    for group in report["recipes"]["mnemis-no-s2"]["groups"].values():
        assert group["fused"] == group["system1"]
    md = bench_selection.markdown(report)
    assert "| mnemis | overall | 5 |" in md and "| learned |" in md


def test_a_recipe_without_a_mnemis_route_is_refused(tmp_path: Path, embedder) -> None:
    with pytest.raises(ValueError, match="no mnemis route"):
        _run(tmp_path, embedder, ["default"])


def test_the_command_prints_a_clear_error_for_an_unknown_recipe(tmp_path: Path, capsys) -> None:
    args = [str(DATA), "--recipe", "nope", "--out", str(tmp_path)]
    assert bench_selection.main(args) == 2
    assert "unknown recipe 'nope'" in capsys.readouterr().err
