"""ResponseCache: round trips, persistence, and two processes writing one file at once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import memstrata
from memstrata.llm import ResponseCache

WRITER = textwrap.dedent(
    """
    import sys
    from memstrata.llm import ResponseCache

    path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cache = ResponseCache(path)
    for i in range(n):
        cache.put(f"{tag}-{i}", f"text {tag} {i}")
        cache.put("shared", f"{tag} {i}")  # both processes fight over one row too
        assert cache.get(f"{tag}-{i}") == f"text {tag} {i}"
    cache.close()
    """
)


def test_round_trip_and_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "cache.sqlite"
    with ResponseCache(path) as cache:
        assert cache.get("h") is None
        cache.put("h", "first")
        cache.put("h", "second ✓")
        assert cache.get("h") == "second ✓"
        assert len(cache) == 1
    with ResponseCache(path) as reopened:
        assert reopened.get("h") == "second ✓"


def test_two_processes_write_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    src = str(Path(memstrata.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    n = 300
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), tag, str(n)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    with ResponseCache(path) as cache:
        assert len(cache) == 2 * n + 1
        for tag in ("a", "b"):
            for i in range(n):
                assert cache.get(f"{tag}-{i}") == f"text {tag} {i}"
        assert cache.get("shared") in {f"a {n - 1}", f"b {n - 1}"}
