"""``memstrata pg start|status|stop``: a local server a store can use, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


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


def test_pg_start_prints_a_url_that_import_and_search_use(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    folder = tmp_path / "pg"
    url = run(subprocess_env, "pg", "start", "--dir", str(folder)).stdout.strip()
    try:
        assert url.startswith("postgresql://postgres:") and "@127.0.0.1:" in url
        assert run(subprocess_env, "pg", "start", "--dir", str(folder)).stdout.strip() == url
        assert run(subprocess_env, "pg", "status", "--dir", str(folder)).stdout.strip() == url
        rows = tmp_path / "a.jsonl"
        rows.write_text(json.dumps({"id": "e1", "text": "Ana moved to Lisbon.", "speaker": "ana"}))
        run(subprocess_env, "import", str(rows), "--db", url, "-n", "demo")
        found = run(subprocess_env, "search", "Lisbon", "--db", url, "-n", "demo", "--json")
        assert "Ana moved to Lisbon." in found.stdout
    finally:
        stopped = run(subprocess_env, "pg", "stop", "--dir", str(folder))
    assert "stopped" in stopped.stderr
    run(subprocess_env, "pg", "status", "--dir", str(folder), code=1)
    gone = run(subprocess_env, "search", "Lisbon", "--db", url, "-n", "demo", code=2)
    assert "no PostgreSQL server answers" in gone.stderr and url.split(":")[2] not in gone.stderr


def test_pg_vacuum_after_a_cli_delete_leaves_no_byte_of_the_text(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """Issue 58, item 3 on PostgreSQL: the delete leaves dead rows in the server's files
    (and its WAL) until `memstrata pg vacuum`, which rewrites them away."""
    import uuid

    import pgtest

    secret = "hunter" + uuid.uuid4().hex[:10]
    url = pgtest.database_url(tmp_path)
    data = pgtest.local_server().folder / "data"
    try:
        rows = tmp_path / "a.jsonl"
        lines = [
            {"id": "e1", "text": "Ana moved to Lisbon.", "speaker": "ana"},
            {"id": "e2", "text": f"My secret wifi password is {secret}", "speaker": "ana"},
        ]
        rows.write_text("".join(json.dumps(line) + "\n" for line in lines))
        run(subprocess_env, "import", str(rows), "--db", url, "-n", "demo")
        run(subprocess_env, "delete", "--db", url, "-n", "demo", "--id", "e2", "--yes")
        held = [p for p in data.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
        assert held  # dead rows and WAL records, until the vacuum
        done = run(subprocess_env, "pg", "vacuum", "--db", url)
        assert "WAL retired" in done.stdout
        held = [p for p in data.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
        assert held == []
        found = run(subprocess_env, "search", "Lisbon", "--db", url, "-n", "demo", "--json")
        assert "Ana moved to Lisbon." in found.stdout
    finally:
        pgtest.drop(tmp_path)
