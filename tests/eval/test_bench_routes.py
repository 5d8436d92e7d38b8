"""``memstrata bench routes``: every route of each recipe timed on its own, with what the
builders built, on synthetic episodes."""

import json
from pathlib import Path

from typer.testing import CliRunner

from memstrata.cli.main import app


def test_bench_routes_times_each_route_and_reports_the_structures(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "routes",
            "--recipe",
            "default,personalai-beam",
            "--episodes",
            "60",
            "--queries",
            "4",
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "routes.json").read_text())
    assert report["episodes"] == 60 and report["queries"] == 4
    assert set(report["recipes"]["default"]["routes"]) == {"system1"}
    beam = report["recipes"]["personalai-beam"]
    assert set(beam["routes"]) == {"personalai", "system1"}
    nodes = beam["structures"]["personalai"]["nodes"]
    assert nodes >= 60 + beam["structures"]["personalai"]["objects"]  # episodes and objects
    for timing in [*beam["routes"].values(), beam["search"]]:
        assert timing["p50"] <= timing["p95"]
    assert "| personalai-beam | personalai |" in (tmp_path / "out" / "routes.md").read_text()
