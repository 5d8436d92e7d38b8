"""What the command line prints, as a user piping it sees it: ``show`` whole and as JSON,
a byte-order mark, a file of bad lines only, the CLI's own commands in its messages, and
counts in the right number ("1 episode", never "1 episodes" or "episode(s)")."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata.engine.contracts import ShowNode

ROWS = [
    {
        "id": "c1",
        "text": "I live in Lisbon with my two cats and I work as a marine biologist at the "
        "big aquarium by the river.",
        "speaker": "Ana",
        "at": "2024-03-01T10:00:00",
        "session": "s1",
    },
    {
        "id": "c2",
        "text": "I moved to Porto last week, so I no longer live in Lisbon; the new flat is "
        "near the old bridge over the river.",
        "speaker": "Ana",
        "at": "2024-07-01T10:00:00",
        "session": "s2",
    },
    {
        "id": "c3",
        "text": "My brother is learning to fly small planes over the coast near Porto every "
        "single weekend this summer.",
        "speaker": "Ben",
        "at": "2024-07-02T10:00:00",
        "session": "s2",
    },
]
# counts that read wrong: "1 episodes", "episode(s)"
WRONG_NUMBER = re.compile(r"\b1 (?:new )?[a-z]+s\b|\w\(s\)|\w\(es\)")


def run(env: dict[str, str], *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "memstrata", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == code, proc.stderr + proc.stdout
    return proc


def jsonl(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def built(tmp_path: Path, subprocess_env: dict[str, str]) -> str:
    db = str(tmp_path / "m.db")
    run(subprocess_env, "import", str(jsonl(tmp_path / "in.jsonl", ROWS)), "--db", db, "-n", "t")
    run(subprocess_env, "build", "--db", db, "-n", "t", "--recipe", "mnemis")
    return db


def test_show_piped_keeps_every_line_whole_and_has_json(
    built: str, subprocess_env: dict[str, str]
) -> None:
    show = ("show", "Ana", "--db", built, "-n", "t")
    piped = run(subprocess_env, *show).stdout
    assert "river. (invalid since 2024-07-01)  [c1]\n" in piped and "river.  [c2]\n" in piped
    (ana,) = json.loads(run(subprocess_env, *show, "--json").stdout)
    assert ana["design"] == "mnemis" and ana["text"] == "Ana (speaker)"
    facts = [c["text"] for c in ana["children"] if c["text"].endswith(("[c1]", "[c2]"))]
    assert len(facts) == 2 and any("(invalid since 2024-07-01)" in f for f in facts)
    # the lines longer than 80 columns are printed whole, markers and sources included
    for fact in facts:
        assert len(fact) > 80 and fact in piped
    from memstrata.cli.common import tree_lines

    lines = piped.splitlines()
    assert lines == tree_lines(ShowNode.model_validate(ana))
    assert lines[0] == "[mnemis] Ana (speaker)"
    assert any(line.startswith("└── ") and line.endswith("[c2]") for line in lines)


def test_a_byte_order_mark_does_not_spoil_the_first_line(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    src = tmp_path / "bom.jsonl"
    src.write_bytes(b"\xef\xbb\xbf" + jsonl(tmp_path / "x.jsonl", ROWS[:2]).read_bytes())
    db = str(tmp_path / "m.db")
    done = run(subprocess_env, "import", str(src), "--db", db, "-n", "t")
    assert "imported 2 new episodes, 0 already present, into 1 namespace: t" in done.stdout
    assert "line 1" not in done.stderr
    queries = tmp_path / "q.jsonl"
    query = {"id": "a", "query": "Porto", "namespace": "t"}
    queries.write_bytes(b"\xef\xbb\xbf" + json.dumps(query).encode())
    found = run(subprocess_env, "search", "--queries", str(queries), "--db", db, "--json")
    assert json.loads(found.stdout)["id"] == "a"


def test_a_file_of_bad_lines_only_creates_nothing_and_says_why(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_bytes(b'{"id": "1"}\nnot json\n{"id": "2", "text": ""}\n\xff\xfe\n')
    db = tmp_path / "new" / "m.db"
    failed = run(subprocess_env, "import", str(src), "--db", str(db), code=2)
    assert not db.exists() and not db.parent.exists()  # neither the store nor its folder
    assert "namespace" not in failed.stdout and failed.stdout == ""
    for line in (1, 2, 3, 4):
        assert f"line {line}: " in failed.stderr
    assert 'missing "text"' in failed.stderr and "invalid JSON" in failed.stderr
    assert (
        f"error: no line of {src} holds a valid episode (4 lines refused, listed above); "
        "nothing was imported and nothing was written"
    ) in failed.stderr


def test_messages_name_the_cli_commands_and_counts_read_right(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    env = subprocess_env
    db = str(tmp_path / "m.db")
    said: list[str] = []

    def go(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        proc = run(env, *args, code=code)
        said.extend([proc.stdout, proc.stderr])
        return proc

    one = jsonl(tmp_path / "one.jsonl", ROWS[:1])
    imported = go("import", str(one), "--db", db, "-n", "t")
    assert "imported 1 new episode, 0 already present, into 1 namespace: t" in imported.stdout
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps(ROWS[1]) + "\nnot json\n")
    partly = go("import", str(mixed), "--db", db, "-n", "t", code=1)
    assert "1 line not imported" in partly.stderr
    worked = go("worker", "--db", db, "--once", "--recipe", "mnemis")
    assert "worker: 2 episodes folded in, 0 failed, 2 rounds" in worked.stdout
    go("import", str(jsonl(tmp_path / "three.jsonl", ROWS[2:])), "--db", db, "-n", "t")
    built = go("build", "--db", db, "-n", "t", "--recipe", "mnemis")
    assert "t mnemis: tier heuristic, 1 new episode, 0 failed" in built.stdout
    missing = go("update", "new text", "--id", "c9", "--db", db, "-n", "t", code=2)
    assert "add()" not in missing.stderr and "`memstrata import`" in missing.stderr
    deleted = go("delete", "-n", "t", "--id", "c1", "--id", "c8", "--yes", "--db", db, code=1)
    assert "deleted 1 episode from 't'" in deleted.stdout
    assert "1 id not found in 't': c8" in deleted.stderr
    everything = "\n".join(said)
    assert not WRONG_NUMBER.search(everything), WRONG_NUMBER.findall(everything)
