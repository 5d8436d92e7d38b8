"""``memstrata bench gguf`` through the CLI, on the bundled model: both samplers answer
every call alike, and the figures the report prints are the ones it writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _bench(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstrata", "bench", "gguf", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_bench_gguf_times_both_samplers_on_the_same_calls(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    out = tmp_path / "out"
    proc = _bench(subprocess_env, "--turns", "1", "--max-tokens", "24", "--out", str(out))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    report = json.loads((out / "gguf.json").read_text())
    assert report["calls"] == 2 and report["identical_replies"] == 2  # entities, facts
    lazy, stock = report["samplers"]["lazy"], report["samplers"]["llama-cpp-python"]
    assert lazy["completion_tokens"] == stock["completion_tokens"] > 0
    assert lazy["prompt_tokens"] == stock["prompt_tokens"] > 0
    assert lazy["completion_tokens"] <= report["lazy_steps"] <= lazy["completion_tokens"] + 2
    assert "Identical replies: 2 of 2." in proc.stdout
    assert (out / "gguf.md").read_text() in proc.stdout


@pytest.mark.parametrize(
    ("args", "named"), [(["--turns", "0"], "--turns"), (["--weights", "q2_k"], "--weights")]
)
def test_bench_gguf_refuses_bad_options(
    args: list[str], named: str, subprocess_env: dict[str, str]
) -> None:
    proc = _bench(subprocess_env, *args)
    assert proc.returncode == 2 and named in proc.stderr
