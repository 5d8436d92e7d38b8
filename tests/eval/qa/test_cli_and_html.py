"""``memstrata bench qa`` and ``bench convert`` as a user runs them, and the HTML report
rendered by headless Chromium: the screenshot must show the plots (coloured pixels),
not a blank page or broken images."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from memstrata.cli.main import app

DATA = Path(__file__).parents[2] / "data" / "tiny_locomo.json"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def memstrata(env: dict[str, str], *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "memstrata", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == code, done.stderr + done.stdout
    return done


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tiny LoCoMo → QA set (bench convert) → bench qa on two recipes."""
    import os

    tmp = tmp_path_factory.mktemp("cli")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTRATA_")}
    src = str(Path(__file__).parents[3] / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    converted = memstrata(env, "bench", "convert", str(DATA), "--out", str(tmp / "set.json"))
    assert "2 samples, 7 turns, 6 questions" in converted.stdout
    args = ["bench", "qa", str(tmp / "set.json"), "--recipes", "rag,default"]
    args += ["--cache-dir", str(tmp / "cache"), "--out", str(tmp / "run")]
    done = memstrata(env, *args)
    assert "## Evidence retrieval" in done.stdout and "| rag |" in done.stdout
    assert "questions: 12/12" in done.stderr  # progress with a total
    again = memstrata(env, *[a if a != str(tmp / "run") else str(tmp / "run2") for a in args])
    assert "12 rows served from the result cache" in again.stdout
    refused = memstrata(env, *args, code=2)
    assert "already holds a run; use --resume" in refused.stderr
    return tmp / "run"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "csv"], "unknown format 'csv'"),
        (["--format", "longmemeval"], "question 0 has no 'question_id'"),
        (["--format", "locomo", "--judge", "gpt"], "unknown judge 'gpt'"),
        (["--format", "locomo", "--recipes", "nope"], "nope"),
        (["--format", "locomo", "--build-tier", "fast"], "unknown tier 'fast'"),
        (["--format", "locomo", "--search-tier", "fast"], "unknown tier 'fast'"),
    ],
)
def test_cli_refuses_bad_arguments_with_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    result = CliRunner().invoke(
        app,
        ["bench", "qa", str(DATA), "--cache-dir", str(tmp_path), "--out", str(tmp_path / "r")]
        + args,
    )
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "r" / "summary.json").exists()


def test_cli_run_directory(run_dir: Path) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    assert set(summary["recipes"]) == {"rag", "default"}
    for entry in summary["recipes"].values():
        assert {"recall@1", "precision@50", "avg_k", "by_category", "latency_ms"} <= set(entry)
        assert set(entry["by_category"]) == {"adversarial", "multi-hop", "single-hop", "temporal"}
        assert 1 <= entry["adaptive_k"] <= entry["avg_k"]
    rows = [json.loads(r) for r in (run_dir / "questions.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and all(r["ranked"] for r in rows)
    # the adaptive set is cut from the fixed one: never larger, never a turn outside it
    assert all(set(r["adaptive_set"]) <= set(r["evidence_set"]) for r in rows)
    assert any(len(r["adaptive_set"]) < len(r["evidence_set"]) for r in rows)


def _browser() -> str | None:
    return next((b for b in map(shutil.which, BROWSERS) if b), None)


def test_html_report_renders_its_plots_in_headless_chromium(run_dir: Path) -> None:
    browser = _browser()
    if browser is None:
        pytest.fail("no Chromium on this machine: `make browsers` installs the Debian package")
    from PIL import Image

    shot = run_dir / "shot.png"
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1280,1000",
            f"--screenshot={shot}",
            (run_dir / "report.html").resolve().as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 1000)
    pixels = np.asarray(image).reshape(-1, 3).astype(int)
    # the page is not blank: well over a tenth of it is not white
    assert (pixels != 255).any(axis=1).mean() > 0.1
    # the plots rendered: coloured (saturated) pixels, which text and tables never have
    coloured = (pixels.max(axis=1) - pixels.min(axis=1) > 80).sum()
    assert coloured > 5000
