"""``memstrata bench delete``: its two paths are b79802d's delete and today's (checked
on the file's bytes), and a small run reports a median per size and path."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from memstrata.config import Config
from memstrata.eval import bench_delete as bd
from memstrata.ingest import prepare_episode
from memstrata.store import SQLiteStore


def _fts_holds(path: Path, word: str) -> bool:
    conn = sqlite3.connect(path)
    try:
        (ns_id,) = conn.execute("SELECT id FROM namespaces WHERE name=?", (bd.NS,)).fetchone()
        rows = conn.execute(f"SELECT block FROM fts_{ns_id}_data").fetchall()
        return any(word.encode() in bytes(r[0] or b"") for r in rows)
    finally:
        conn.close()


def test_the_before_path_leaves_the_terms_and_the_current_one_does_not(tmp_path: Path) -> None:
    config = Config.load(None, llm={"kind": "none"})
    for before in (True, False):
        path = tmp_path / f"{before}.db"
        bd._write(path, 300, seed=3)
        store = SQLiteStore(path)
        store.add_episodes(bd.NS, [prepare_episode({"id": "x", "text": "zyxwvut secret"}, config)])
        for b in range(4):  # later writes: FTS5 merges that segment into a deeper one
            more = [{"id": f"m{b}{j}", "text": f"tomatoes {b} {j}"} for j in range(3)]
            store.add_episodes(bd.NS, [prepare_episode(m, config) for m in more])
        store.close()
        assert _fts_holds(path, "zyxwvut")
        times = asyncio.run(bd._time_deletes(path, ["x"], before))
        assert len(times) == 1  # one delete timed, and done: the episode is gone
        store = SQLiteStore(path)
        assert store.existing_ids(bd.NS, ["x", "m00"]) == {"m00"}
        store.close()
        assert _fts_holds(path, "zyxwvut") == before


def test_a_small_run_reports_both_paths_per_size(tmp_path: Path) -> None:
    report = bd.run(tmp_path, [200, 400], deletes=3, seed=5)
    assert [r["episodes"] for r in report["rows"]] == [200, 400]
    for row in report["rows"]:
        assert row["deletes"] == len(row["before_ms"]) == len(row["after_ms"]) == 3
    assert "| 400 | 3 |" in bd.markdown(report)
