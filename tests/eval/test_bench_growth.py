import json
from pathlib import Path

from typer.testing import CliRunner

from memstrata.cli.main import app


def test_bench_growth_reports_cost_work_and_structure_per_size(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["bench", "growth", "--recipe", "memtree", "--sizes", "6,12", "--inserts", "3"]
    result = CliRunner().invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "growth-memtree.json").read_text())
    assert [s["n"] for s in report["sizes"]] == [6, 12]
    for size in report["sizes"]:
        assert size["problems"] == []
        # each timed insert is one MemTree insertion, with its ancestors aggregated
        assert size["work_per_insert"]["insertions"] == 1.0
        assert size["builders"]["memtree"]["leaves"] == size["n"] + 3
        # on the heuristic tier, without a single model call
        assert size["tier"] == "heuristic"
        assert size["llm_calls_per_insert"] == size["prompt_tokens_per_insert"] == 0
        for timing in ("add_ms", "build_ms", "build_cpu_ms"):
            assert size[timing]["p50"] <= size[timing]["p95"]
    assert report["sizes"][1]["builders"]["memtree"]["nodes"] > 15


def test_bench_growth_refuses_a_recipe_that_builds_nothing(tmp_path: Path) -> None:
    args = ["bench", "growth", "--recipe", "rag", "--sizes", "3", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "builds nothing" in result.output
