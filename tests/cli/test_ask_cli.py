"""``memstrata ask`` run as a real process, without an LLM (the extractive answer)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each run is a fresh process that loads MiniLM

CAT = "We adopted a tabby cat called Biscuit."
ROWS = [
    {"id": "1", "text": "I planted basil and mint on the balcony.", "speaker": "Ana"},
    {"id": "2", "text": "My brother is learning to fly small planes.", "speaker": "Ben"},
    {"id": "3", "text": f"Work was hectic this week. {CAT}", "speaker": "Ana"},
]


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstrata", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_ask_json_plain_and_unknown_namespace(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    db = str(tmp_path / "m.db")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    imported = run(subprocess_env, "import", str(src), "--db", db, "--namespace", "home")
    assert imported.returncode == 0, imported.stderr
    assert "imported 3 new" in imported.stdout

    question = "What is the name of the cat?"
    res = run(subprocess_env, "ask", question, "--db", db, "-n", "home", "--json", "--k", "2")
    assert res.returncode == 0, res.stderr
    answer = json.loads(res.stdout)
    assert answer["question"] == question
    assert answer["extractive"] is True and answer["abstained"] is False
    assert CAT in answer["text"]
    assert "3" in answer["sources"] and set(answer["sources"]) <= {"1", "2", "3"}
    assert answer["usage"] == {}
    assert "hits" not in answer

    plain = run(subprocess_env, "ask", question, "--db", db, "-n", "home", "--recipe", "default")
    assert plain.returncode == 0, plain.stderr
    printed = " ".join(plain.stdout.split())  # rich may wrap a long answer
    assert CAT in printed
    assert "sources: 3" in printed and "(extractive)" in printed

    missing = run(subprocess_env, "ask", question, "--db", db, "-n", "nowhere")
    assert missing.returncode == 2
    assert "unknown namespace 'nowhere'" in missing.stderr
    assert "Traceback" not in missing.stderr and missing.stdout == ""


def test_an_abstention_prints_the_one_text(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    """What memory does not hold reads "Not in memory." here too (plain and JSON), as in
    the API, REST, MCP and the explorer."""
    db = str(tmp_path / "m.db")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    assert run(subprocess_env, "import", str(src), "--db", db, "-n", "home").returncode == 0
    question = "What is the boiling point of mercury?"
    plain = run(subprocess_env, "ask", question, "--db", db, "-n", "home")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[0] == "Not in memory."
    assert "NO_ANSWER" not in plain.stdout and "abstained" in plain.stdout
    data = json.loads(
        run(subprocess_env, "ask", question, "--db", db, "-n", "home", "--json").stdout
    )
    assert data["abstained"] is True and data["text"] == "Not in memory."
