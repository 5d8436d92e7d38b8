"""``memstrata import`` conflicts and ``--replace``, ``update``, ``history`` and ``delete``
of missing ids, run as real processes (``python -m memstrata``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import ROWS, run, write_jsonl

NEW_TEXT = "The plumber fixed the leaking kitchen tap on Monday."


@pytest.mark.slow
def test_import_reports_conflicts_per_line_and_replaces_on_request(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    db = str(tmp_path / "m.db")
    run(subprocess_env, "import", str(write_jsonl(tmp_path / "a.jsonl", ROWS)), "--db", db)
    changed = [dict(r) for r in ROWS]
    changed[1]["text"] = NEW_TEXT  # line 2: other text
    changed[2]["session"] = "s9"  # line 3: same text, other session
    src = write_jsonl(tmp_path / "b.jsonl", [*changed, {"id": "4", "text": "A new line."}])

    proc = run(subprocess_env, "import", str(src), "--db", db, ok=False)
    assert proc.returncode == 1
    assert (
        "imported 1 new episode, 1 already present, 2 conflicting (left unchanged)" in proc.stdout
    )
    assert "line 2: id '2' is already stored with different content" in proc.stderr
    assert "line 3: id '3' is already stored with different content" in proc.stderr
    assert "line 1:" not in proc.stderr and "line 4:" not in proc.stderr
    assert "2 conflicts" in proc.stderr and "--replace" in proc.stderr

    proc = run(subprocess_env, "import", str(src), "--db", db, "--replace")
    assert "imported 0 new episodes, 2 already present, 2 replaced" in proc.stdout
    again = run(subprocess_env, "import", str(src), "--db", db)  # idempotent now
    assert "imported 0 new episodes, 4 already present, into" in again.stdout

    hist = json.loads(run(subprocess_env, "history", "--id", "2", "--db", db, "--json").stdout)
    assert [v["text"] for v in hist["versions"]] == [ROWS[1]["text"]]
    assert hist["versions"][0]["version"] == 1 and hist["versions"][0]["replaced_at"]
    assert hist["current"]["text"] == NEW_TEXT and hist["namespace"] == "default"
    res = run(subprocess_env, "search", "who fixed the leaking tap?", "--db", db, "--json")
    assert json.loads(res.stdout)["hits"][0]["sources"] == ["2"]


@pytest.mark.slow
def test_update_from_argument_file_and_stdin_then_history(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    db = str(tmp_path / "m.db")
    src = write_jsonl(tmp_path / "a.jsonl", ROWS)
    run(subprocess_env, "import", str(src), "--db", db, "-n", "home")
    base = ("update", "--db", db, "-n", "home", "--id", "3")

    first = run(subprocess_env, *base, "We adopted a ginger cat called Mango.")
    assert "updated '3' in 'home': version 2 is current, 1 earlier version kept" in first.stdout
    body = tmp_path / "text.txt"
    body.write_text("We adopted a ginger cat called Mango and a puppy.\n")
    second = run(subprocess_env, *base, "--file", str(body), "--speaker", "Ben")
    assert "version 3 is current" in second.stdout
    third = run(subprocess_env, *base, stdin="Mango the cat sleeps all day.\n")
    assert "version 4 is current" in third.stdout
    same = run(subprocess_env, *base, "-", stdin="Mango the cat sleeps all day.")
    assert "already holds this content; nothing changed" in same.stdout

    hist = json.loads(
        run(subprocess_env, "history", "--db", db, "-n", "home", "--id", "3", "--json").stdout
    )
    assert [v["text"] for v in hist["versions"]] == [
        "We adopted a tabby cat called Biscuit.",
        "We adopted a ginger cat called Mango.",
        "We adopted a ginger cat called Mango and a puppy.",
    ]
    assert [v["speaker"] for v in hist["versions"]] == ["Ana", "Ana", "Ben"]
    assert hist["current"]["text"] == "Mango the cat sleeps all day."
    assert hist["current"]["speaker"] == "Ben" and hist["current"]["session"] == "s2"
    table = run(subprocess_env, "history", "--db", db, "-n", "home", "--id", "3").stdout
    assert "Biscuit" in table and "current" in table

    res = run(subprocess_env, "search", "Biscuit", "--db", db, "-n", "home", "--json")
    assert all(
        h["sources"] != ["3"] or "Biscuit" not in h["text"] for h in json.loads(res.stdout)["hits"]
    )
    res = run(subprocess_env, "search", "Mango", "--db", db, "-n", "home", "--json", "--k", "1")
    assert json.loads(res.stdout)["hits"][0]["sources"] == ["3"]


@pytest.mark.slow
def test_update_and_history_errors_are_clear(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    db = str(tmp_path / "m.db")
    run(subprocess_env, "import", str(write_jsonl(tmp_path / "a.jsonl", ROWS)), "--db", db)
    missing = run(subprocess_env, "update", "--db", db, "--id", "nope", "text", ok=False)
    assert missing.returncode == 2 and "no episode 'nope' in namespace 'default'" in missing.stderr
    empty = run(subprocess_env, "update", "--db", db, "--id", "1", "  ", ok=False)
    assert empty.returncode == 2 and "empty text" in empty.stderr
    meta = run(
        subprocess_env, "update", "--db", db, "--id", "1", "x", "--metadata", "[1]", ok=False
    )
    assert meta.returncode == 2 and "--metadata must be a JSON object" in meta.stderr
    hist = run(subprocess_env, "history", "--db", db, "--id", "nope", ok=False)
    assert hist.returncode == 2 and "no episode 'nope'" in hist.stderr
    never = run(subprocess_env, "history", "--db", db, "--id", "1")
    assert "never updated" in never.stderr


@pytest.mark.slow
def test_delete_names_missing_ids_and_exits_1(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    db = str(tmp_path / "m.db")
    run(subprocess_env, "import", str(write_jsonl(tmp_path / "a.jsonl", ROWS)), "--db", db)
    args = ("delete", "--db", db, "-n", "default", "--yes")
    proc = run(subprocess_env, *args, "--id", "1", "--id", "nope", "--id", "zip", ok=False)
    assert proc.returncode == 1
    assert "deleted 1 episode from 'default'" in proc.stdout
    assert "2 ids not found in 'default': nope, zip" in proc.stderr
    ok = run(subprocess_env, *args, "--id", "2")
    assert "deleted 1 episode from" in ok.stdout and "not found" not in ok.stderr
