"""The benchmarks are beside the runtime: their commands and ``memstrata.eval`` load when a
``bench`` command runs (or lists its commands), never for the other commands, and the
LoCoMo import of ``memstrata import`` is a reader of its own (``memstrata.importers``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent.parent / "data" / "tiny_locomo.json"

# Run the command as the `memstrata` script does, then list the lab's modules it loaded.
PROBE = """
import json, sys
from memstrata.cli.main import app

try:
    app(sys.argv[2:], prog_name="memstrata")
except SystemExit as exc:
    code = exc.code
lab = sorted(m for m in sys.modules
             if m.startswith(("memstrata.eval", "memstrata.cli.bench", "matplotlib")))
with open(sys.argv[1], "w") as fh:
    json.dump({"code": code, "lab": lab}, fh)
"""


def probe(env: dict[str, str], tmp: Path, *args: str) -> tuple[int, list[str]]:
    """Run ``memstrata ARGS`` in a fresh process: its exit status and the lab's modules
    it imported."""
    report = tmp / "probe.json"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(report), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(report.read_text())
    return data["code"], data["lab"]


@pytest.mark.slow  # four processes
def test_only_a_bench_command_loads_the_benchmarks(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    db = str(tmp_path / "m.db")
    for args in (["--help"], ["import", str(DATA), "--db", db], ["recipes"]):
        code, lab = probe(subprocess_env, tmp_path, *args)
        assert code == 0 and lab == [], (args, lab)
    code, lab = probe(subprocess_env, tmp_path, "bench", "--help")
    assert code == 0 and "memstrata.cli.bench_qa" in lab, lab
    assert not any(m.startswith("matplotlib") for m in lab), lab
