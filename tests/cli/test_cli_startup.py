"""What a command imports: the commands that neither search nor build must not load the
embedding model, plotting, graph clustering, stemming, an HTTP client (no LLM is
configured) or the benchmarks, whose commands load only when a ``bench`` command runs.
Checked on the modules a real process holds after the command ran, not on seconds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# Run the command the way the `memstrata` script does, then list what got imported.
PROBE = """
import json, sys
from memstrata.cli.main import app

try:
    app(sys.argv[2:], prog_name="memstrata")
except SystemExit as exc:
    code = exc.code
heavy = {"onnxruntime", "matplotlib", "igraph", "leidenalg", "nltk", "httpx", "memstrata.eval"}
families = {"memstrata.eval" if m.startswith("memstrata.eval") else m.split(".")[0]
            for m in sys.modules}
lab = sorted(m for m in sys.modules if m.startswith(("memstrata.eval", "memstrata.cli.bench")))
with open(sys.argv[1], "w") as fh:
    json.dump({"code": code, "heavy": sorted(families & heavy), "lab": lab}, fh)
"""


def probe(env: dict[str, str], tmp: Path, *args: str) -> tuple[int, list[str]]:
    """Run ``memstrata ARGS`` in a fresh process: its exit status and the heavy packages
    it imported."""
    data = _probed(env, tmp, *args)
    return data["code"], data["heavy"]


def _probed(env: dict[str, str], tmp: Path, *args: str) -> dict[str, Any]:
    """What :data:`PROBE` wrote of ``memstrata ARGS``: ``code``, ``heavy``, and ``lab``,
    the benchmarks' modules it imported."""
    report = tmp / "probe.json"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(report), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    data: dict[str, Any] = json.loads(report.read_text())
    return data


@pytest.mark.slow  # nine processes
def test_commands_that_do_not_embed_import_nothing_heavy(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    db = str(tmp_path / "m.db")
    rows = [
        {"id": "1", "text": "I planted basil on the balcony.", "speaker": "Ana"},
        {"id": "2", "text": "My brother is learning to fly.", "speaker": "Ben"},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    imported = subprocess.run(
        [sys.executable, "-m", "memstrata", "import", str(src), "--db", db, "-n", "home"],
        capture_output=True,
        text=True,
        env=subprocess_env,
        timeout=300,
    )
    assert imported.returncode == 0, imported.stderr
    light = [
        ["--help"],
        ["--version"],
        ["config"],
        ["recipes"],
        ["stats", "--db", db],
        ["history", "--db", db, "-n", "home", "--id", "1"],
        ["delete", "--db", db, "-n", "home", "--id", "2", "--yes"],
    ]
    for args in light:
        code, heavy = probe(subprocess_env, tmp_path, *args)
        assert code == 0, args
        assert heavy == [], (args, heavy)
    # the probe does see what a command loads: a search embeds its query
    code, heavy = probe(subprocess_env, tmp_path, "search", "basil", "--db", db, "-n", "home")
    assert code == 0 and heavy == ["onnxruntime"]


@pytest.mark.slow  # three processes
def test_only_a_bench_command_loads_the_benchmarks(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """The bench commands and ``memstrata.eval`` load when a ``bench`` command runs or
    lists its commands; a LoCoMo file is imported by a reader of its own."""
    locomo = Path(__file__).parents[1] / "data" / "tiny_locomo.json"
    for args in (["--help"], ["import", str(locomo), "--db", str(tmp_path / "m.db")]):
        data = _probed(subprocess_env, tmp_path, *args)
        assert data["code"] == 0 and data["lab"] == [], (args, data)
    data = _probed(subprocess_env, tmp_path, "bench", "--help")
    assert data["code"] == 0 and "memstrata.cli.bench_qa" in data["lab"], data
    assert "matplotlib" not in data["heavy"], data
