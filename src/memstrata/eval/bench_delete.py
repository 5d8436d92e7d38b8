"""``memstrata bench delete``: what erasing costs a delete (docs/benchmarks.md, "Delete").

For each size, one SQLite store of that many synthetic turns (``bench scale``'s) is
written once and copied twice; on one copy each delete runs as b79802d ran it (rows,
tombstones in FTS5, repairs), on the other as it runs now (also the episode's earlier
versions looked up, the FTS5 index merged into one segment, the index files of a large
namespace removed, the vectors made from the text dropped, the LLM cache purged, the
error texts quoting it redacted and the WAL truncated). The two are timed alternately,
one episode per ``Memory.delete``, so both see the same machine.

The episodes carry no vectors (the delete reads none; only the lookup of the ones it
may drop runs) and the default recipe builds nothing, so the figure is the store's.
"""

from __future__ import annotations

import asyncio
import platform
import random
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from memstrata.config import Config
from memstrata.eval.bench_scale import synthetic_turns
from memstrata.eval.report import write_report
from memstrata.ingest import prepare_episode
from memstrata.memory import AsyncMemory
from memstrata.store import SQLiteStore

NS = "delete-bench"


@contextmanager
def as_before() -> Iterator[None]:
    """The delete path of b79802d: none of the erasure steps (they are the only change
    to it since)."""
    with (
        mock.patch("memstrata.store.sqlite._rewrite_fts", lambda conn, ns_id: None),
        mock.patch.object(SQLiteStore, "_erase_files", lambda self, ns_id: None),
        mock.patch("memstrata.updates.EpisodeWriter._erase", lambda self, removed: None),
        mock.patch("memstrata.erasure.going", lambda store, ns, ids: store.get_episodes(ns, ids)),
    ):
        yield


def _write(path: Path, n: int, seed: int) -> list[str]:
    config = Config.load(None, llm={"kind": "none"})
    store = SQLiteStore(path)
    try:
        turns = synthetic_turns(n, seed)
        for start in range(0, n, 2048):
            batch = [prepare_episode(t, config) for t in turns[start : start + 2048]]
            store.add_episodes(NS, batch)
    finally:
        store.close()
    return [str(t["id"]) for t in turns]


async def _time_deletes(path: Path, ids: list[str], before: bool) -> list[float]:
    config = Config.load(None, llm={"kind": "none"})
    memory = await AsyncMemory.open(path, config=config)
    out: list[float] = []
    try:
        for eid in ids:
            with as_before() if before else _nothing():
                t0 = time.perf_counter()
                report = await memory.delete([eid], namespace=NS)
                out.append((time.perf_counter() - t0) * 1000.0)
            assert int(report) == 1
    finally:
        await memory.close()
    return out


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def run(
    folder: Path,
    sizes: list[int],
    deletes: int = 15,
    seed: int = 7,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for n in sizes:
        if progress:
            progress(f"writing {n:,} episodes")
        base = folder / f"n{n}.db"
        ids = _write(base, n, seed)
        before, after = folder / f"n{n}-before.db", folder / f"n{n}-after.db"
        shutil.copy(base, before)
        shutil.copy(base, after)
        picks = random.Random(seed).sample(ids, min(deletes, len(ids)))
        times: dict[str, list[float]] = {"before": [], "after": []}
        if progress:
            progress(f"deleting {len(picks)} of {n:,}, alternately before and after")
        for eid in picks:  # alternate, one delete each, so both see the same machine
            times["before"] += asyncio.run(_time_deletes(before, [eid], True))
            times["after"] += asyncio.run(_time_deletes(after, [eid], False))
        rows.append(
            {
                "episodes": n,
                "deletes": len(picks),
                "before_ms_p50": statistics.median(times["before"]),
                "after_ms_p50": statistics.median(times["after"]),
                "before_ms": times["before"],
                "after_ms": times["after"],
                "fts_bytes": _fts_bytes(after),
            }
        )
        for p in folder.glob(f"n{n}*"):
            p.unlink()
    return {
        "machine": {"cpus": _cpus(), "python": platform.python_version()},
        "sqlite": _sqlite_version(),
        "rows": rows,
    }


def _fts_bytes(path: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        (ns_id,) = conn.execute("SELECT id FROM namespaces WHERE name=?", (NS,)).fetchone()
        row = conn.execute(f"SELECT sum(length(block)) FROM fts_{int(ns_id)}_data").fetchone()
        return int(row[0] or 0)
    finally:
        conn.close()


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0


def _sqlite_version() -> str:
    import sqlite3

    return sqlite3.sqlite_version


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# bench delete (SQLite {report['sqlite']}, {report['machine']['cpus']} cores)",
        "",
        "| episodes | deletes | b79802d p50 ms | now p50 ms | FTS5 index |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['episodes']:,} | {r['deletes']} | {r['before_ms_p50']:.1f} | "
            f"{r['after_ms_p50']:.1f} | {r['fts_bytes'] / 1e6:.1f} MB |"
        )
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, "delete", markdown)
