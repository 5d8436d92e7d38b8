"""``memstrata bench serve``: a real ``memstrata serve`` child process under a small load,
every acknowledged add found once in the store file, the sequential comparison done."""

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata.cli.main import app
from memstrata.eval import bench_serve as bs
from memstrata.store import open_store

pytestmark = pytest.mark.slow  # two servers started, the embedder loaded in each


def test_bench_serve_loads_a_real_server_and_finds_every_add(tmp_path: Path) -> None:
    db = tmp_path / "served.db"
    args = ["bench", "serve", "--clients", "4", "--requests", "60", "--seed-episodes", "100"]
    args += ["--queries", "24", "--db", str(db), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)

    load, check, over = report["load"], report["check"], report["overhead"]
    assert load["issued"] == 60 and not load["stopped_by_time"]
    assert load["errors"] == 0
    adds, searches = load["verbs"]["add"], load["verbs"]["search"]
    assert adds["count"] == 18 and searches["count"] == 42  # 30 % of 60 are adds
    assert adds["ok"] == 18 and searches["ok"] == 42
    assert check["adds_acknowledged"] == adds["ok"]
    assert check["adds_visible"] == adds["ok"]
    assert check["missing"] == 0 and check["duplicates"] == 0
    assert check["episodes_in_namespace"] == 100 + 18
    for side in bs.SIDES:
        assert over[side]["count"] == 24
        assert 0 < over[side]["p50_ms"] <= over[side]["p95_ms"]
    low, high = over["overhead_ci95_ms"]
    assert low <= high  # an interval from resampled queries
    assert over["body_bytes_p50"] > 0
    assert bs.clean_exit(report["server_exit"])

    # the store file, read apart from the bench: the seeded turns and the adds, once each
    store = open_store(db, create=False)
    try:
        ids = Counter(e.id for e in store.iter_episodes(bs.NAMESPACE, limit=10_000))
    finally:
        store.close()
    assert len(ids) == 118 and set(ids.values()) == {1}
    assert sum(1 for i in ids if "-add-" in i) == 18


def test_the_server_is_stopped_when_a_run_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[bs.Server] = []

    class Recorded(bs.Server):
        def __enter__(self) -> bs.Server:
            started.append(self)
            return super().__enter__()

    def phases(name: str, total: int) -> Any:
        if name == "load":
            raise RuntimeError("stopped on purpose")
        return lambda n: None

    monkeypatch.setattr(bs, "Server", Recorded)
    settings = bs.Settings(clients=2, requests=10, seed_episodes=5, queries=2)
    with pytest.raises(RuntimeError, match="on purpose"):
        bs.run(settings, db=tmp_path / "failed.db", phases=phases)
    [server] = started
    assert server.proc is not None and server.proc.poll() is not None
