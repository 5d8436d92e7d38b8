"""A large namespace's search indexes and the command line, run as real processes.

A one-shot search used to start the vector graph and full-text index builds of a
namespace past 20,000 episodes on daemon threads and leave while they ran in native code:
`memstrata search --queries` printed its results and died with exit 134 (``terminate
called without an active exception``), and no index was ever written. Now one-shot
commands never build, ``memstrata build`` writes the indexes once, later searches read
them, and a process that leaves mid-build abandons it cleanly. The thresholds are lowered
through the configuration (``[indexes]``) so that a few hundred episodes are "large".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memstrata.eval.bench_scale import synthetic_queries, synthetic_turns

N = 600
THRESHOLD = 200
NS = "big"
SRC = Path(__file__).resolve().parents[2] / "src"


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTRATA_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    env["MEMSTRATA_INDEXES__ANN_THRESHOLD"] = str(THRESHOLD)
    env["MEMSTRATA_INDEXES__TEXT_THRESHOLD"] = str(THRESHOLD)
    return {**env, **(extra or {})}


def run(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "memstrata", *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert proc.returncode == code, proc.stderr[-3000:] + proc.stdout[-2000:]
    return proc


def _rows(n: int) -> str:
    return "".join(
        json.dumps({**t, "occurred_at": t["occurred_at"].isoformat()}) + "\n"
        for t in synthetic_turns(n)
    )


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store whose namespace is past both thresholds, imported once for the module."""
    folder = tmp_path_factory.mktemp("large")
    rows = folder / "rows.jsonl"
    rows.write_text(_rows(N))
    db = folder / "m.db"
    run("import", str(rows), "--db", str(db), "-n", NS)
    return db


@pytest.fixture
def db(large: Path, tmp_path: Path) -> Path:
    for path in large.parent.glob(large.name + "*"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path / large.name


@pytest.fixture
def queries(tmp_path: Path) -> Path:
    path = tmp_path / "q.jsonl"
    lines = [json.dumps({"id": f"q{i}", "query": q}) for i, q in enumerate(synthetic_queries(60))]
    path.write_text("\n".join(lines) + "\n")
    return path


def on_disk(db: Path) -> dict[str, tuple[int, int]]:
    """Every file of the store's index folders: (size, modification time)."""
    found = {}
    for root in (Path(f"{db}-ann"), Path(f"{db}-fts")):
        if root.exists():
            for path in root.rglob("*"):
                if path.is_file():
                    found[str(path.relative_to(db.parent))] = (
                        path.stat().st_size,
                        path.stat().st_mtime_ns,
                    )
    return found


def test_a_search_of_a_large_namespace_exits_cleanly_and_builds_nothing(
    db: Path, queries: Path
) -> None:
    found = run("search", "--queries", str(queries), "--db", str(db), "-n", NS, "--json")
    lines = [json.loads(line) for line in found.stdout.splitlines()]
    assert [line["id"] for line in lines] == [f"q{i}" for i in range(60)]
    assert all(line["hits"] for line in lines)
    assert on_disk(db) == {}  # no build was started, so none was left half-done
    assert not Path(f"{db}-ann").exists() and not Path(f"{db}-fts").exists()
    # the user is told why it read everything, and what writes the indexes
    assert "no up-to-date vector graph or full-text index" in found.stderr
    assert f"memstrata build --db {db} -n {NS}" in found.stderr


def test_build_writes_the_indexes_once_and_later_searches_read_them(
    db: Path, queries: Path
) -> None:
    first = json.loads(run("build", "--db", str(db), "--json").stdout)
    (indexed,) = [r for r in first if "indexes" in r]
    assert indexed["namespace"] == NS
    assert indexed["indexes"]["built"] == ["vector graph", "full-text index"]
    assert indexed["indexes"]["vectors"] == N and indexed["indexes"]["documents"] == N
    files = on_disk(db)
    manifest = json.loads(next(Path(f"{db}-ann").glob("*.json")).read_text())
    assert manifest["count"] == N
    assert sorted(p.name for p in Path(f"{db}-ann").iterdir()) == sorted(
        [manifest["file"], next(Path(f"{db}-ann").glob("*.json")).name]
    )
    text_manifest = json.loads((Path(f"{db}-fts") / "ns1.json").read_text())
    assert text_manifest["count"] == N
    assert sorted(p.name for p in Path(f"{db}-fts").iterdir()) == sorted(
        ["ns1.json", text_manifest["folder"]]
    )

    found = run("search", "--queries", str(queries), "--db", str(db), "-n", NS, "--json")
    assert len(found.stdout.splitlines()) == 60
    assert "note:" not in found.stderr
    assert on_disk(db) == files  # read, not written again

    again = json.loads(run("build", "--db", str(db), "--json").stdout)
    (indexed,) = [r for r in again if "indexes" in r]
    assert indexed["indexes"]["built"] == []  # up to date: no second build
    assert indexed["indexes"]["vectors"] == N and indexed["indexes"]["documents"] == N
    assert on_disk(db) == files
    text = run("build", "--db", str(db)).stdout
    assert (
        f"{NS} search indexes: vector graph of {N} vectors, full-text index of {N} "
        "documents (up to date)"
    ) in text


def test_the_worker_writes_the_indexes_when_the_queue_is_empty(db: Path) -> None:
    done = run("worker", "--db", str(db), "--once")
    assert f"search indexes of {NS} written: vector graph, full-text index" in done.stdout
    files = on_disk(db)
    assert json.loads(next(Path(f"{db}-ann").glob("*.json")).read_text())["count"] == N
    assert json.loads((Path(f"{db}-fts") / "ns1.json").read_text())["count"] == N
    again = run("worker", "--db", str(db), "--once")
    assert "search indexes" not in again.stdout and on_disk(db) == files


# A library process whose search started a build, leaving mid-build: its own atexit
# handler (registered after memstrata's, so run before it) lets the build go on only
# once the interpreter is leaving, so the exit always meets the build half done.
LEAVE_MID_BUILD = """
import atexit, sys, threading
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.store.sqlite import SQLiteStore

which = sys.argv[2]
store = SQLiteStore(
    sys.argv[1],
    ann_threshold={threshold} if which == "vector graph" else 10**9,
    text_threshold={threshold} if which == "full-text index" else 10**9,
)
started, leaving = threading.Event(), threading.Event()

def hold(kind, done, total):
    started.set()
    leaving.wait()

threading.Thread(
    target=store.build_indexes, args=("{ns}", MiniLMEmbedder.model_id, hold), daemon=True
).start()
started.wait()
atexit.register(leaving.set)
print("leaving mid-build", flush=True)
"""


@pytest.mark.parametrize("which", ["vector graph", "full-text index"])
def test_a_process_that_leaves_mid_build_exits_cleanly(db: Path, which: str) -> None:
    script = textwrap.dedent(LEAVE_MID_BUILD).format(threshold=THRESHOLD, ns=NS)
    proc = subprocess.run(
        [sys.executable, "-c", "import logging; logging.basicConfig(level='INFO')\n" + script]
        + [str(db), which],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "leaving mid-build" in proc.stdout
    assert "terminate called" not in proc.stderr
    assert "build abandoned" in proc.stderr
    # nothing half-written is left: no graph, no manifest, no index folder
    assert on_disk(db) == {}
    assert not any(Path(f"{db}-fts").glob("ns*"))
    # and the store is whole: a build afterwards writes the index
    done = json.loads(run("build", "--db", str(db), "--json").stdout)
    (indexed,) = [r for r in done if "indexes" in r]
    assert indexed["indexes"]["vectors"] == N and indexed["indexes"]["documents"] == N


def test_postgresql_keeps_its_own_indexes(tmp_path: Path) -> None:
    """The same commands on PostgreSQL: nothing to write, nothing to note, exit 0."""
    import pgtest

    url = pgtest.database_url(tmp_path)
    try:
        rows = tmp_path / "rows.jsonl"
        rows.write_text(_rows(THRESHOLD + 50))
        run("import", str(rows), "--db", url, "-n", NS)
        built = json.loads(run("build", "--db", url, "--json").stdout)
        assert not [r for r in built if "indexes" in r]
        found = run("search", "who visited Lisbon?", "--db", url, "-n", NS, "--json")
        assert json.loads(found.stdout)["hits"] and "note:" not in found.stderr
    finally:
        pgtest.drop(tmp_path)
