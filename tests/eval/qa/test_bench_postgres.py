"""``bench qa --db postgresql://…``: the harness runs on a PostgreSQL store, ranks as on
SQLite, and keeps its cached rows apart from SQLite's."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import pgtest
from memstrata.cli.main import app

DATA = Path(__file__).parents[2] / "data" / "tiny_locomo.json"
ARGS = ["--format", "locomo", "--recipes", "default,mnemis,memtree", "--no-answers"]
ARGS += ["--build-tier", "heuristic", "--search-tier", "heuristic"]


def ranked(run: Path) -> dict[tuple[str, str], list[str]]:
    rows = [json.loads(line) for line in (run / "questions.jsonl").read_text().splitlines()]
    return {(r["recipe"], r["qid"]): r["ranked"] for r in rows}


def test_bench_qa_on_postgres_ranks_as_on_sqlite(tmp_path: Path) -> None:
    url = pgtest.database_url(tmp_path)
    try:
        cache = ["--cache-dir", str(tmp_path / "cache")]
        runner = CliRunner()
        lite = runner.invoke(
            app, ["bench", "qa", str(DATA), *ARGS, *cache, "--out", str(tmp_path / "a")]
        )
        assert lite.exit_code == 0, lite.output
        pg = runner.invoke(
            app,
            ["bench", "qa", str(DATA), *ARGS, *cache, "--db", url, "--out", str(tmp_path / "b")],
        )
        assert pg.exit_code == 0, pg.output
        assert " 0 rows served from the result cache" in pg.output  # made on PostgreSQL
        assert ranked(tmp_path / "a") == ranked(tmp_path / "b")
        assert len(ranked(tmp_path / "b")) == 18
    finally:
        pgtest.drop(tmp_path)
