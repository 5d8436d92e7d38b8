"""Writers, workers and a searcher on one store at once (``memstrata bench faults``).

Four writer processes add distinct episodes one at a time through ``Memory.add`` (every
fifth one twice: the second add must be a no-op), two ``memstrata worker`` processes
fold them into the same recipe (so they contend for its build lease) and a searcher
process searches with that recipe, all for a bounded time. Then the workers are asked to
stop (SIGTERM), one more worker drains what is left, and the store is checked: every
add visible exactly once by its id, no error in any process, every episode built, the
invariants of :mod:`memstrata.eval.invariants` and the builder's own checks.

The writer and searcher are this module run as a program:
``python -m memstrata.eval.faults_concurrency writer|searcher DB RECIPE SECONDS NAME``.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memstrata.embed.base import Embedder
from memstrata.eval.bench_scale import _clause, synthetic_queries
from memstrata.eval.faults import NS, QUIET, conversation, hermetic_env
from memstrata.eval.invariants import all_episodes, check_store, design_problems, expected_lines
from memstrata.eval.sites import Site, SQLiteSite
from memstrata.memory import AsyncMemory

WRITERS = 4
WORKERS = 2
QUEUED: dict[str, Any] = {"build.mode": "queue", "llm.kind": "none"}
SEED_TURNS = 20  # stored before the processes start, so the first search has a namespace


@dataclass
class ConcurrencyReport:
    """What the processes did and what the store holds afterwards."""

    recipe: str
    seconds: float
    adds: int = 0  # distinct ids the writers were told were stored
    repeated_adds: int = 0  # second adds of an id, each a no-op
    visible_once: int = 0  # of those ids, stored exactly once with their text
    searches: int = 0
    built: int = 0  # episodes the recipe's builder has done after the drain
    episodes: int = 0
    errors: list[str] = field(default_factory=list)
    problems: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors and not self.problems and self.visible_once == self.adds


def writer(db: str, recipe: str, seconds: float, name: str) -> dict[str, Any]:
    """Add episodes ``NAME-0``, ``NAME-1``, ... until the time is up; what was stored."""
    from memstrata.facade import Memory

    rng = random.Random(name)
    added: dict[str, str] = {}
    errors: list[str] = []
    repeats = 0
    with Memory.open(db, recipe=recipe, **QUEUED) as m:
        end = time.monotonic() + seconds
        i = 0
        while time.monotonic() < end:
            ep_id, text = f"{name}-{i}", f"{name} says: {_clause(rng)}"
            try:
                m.add(text, id=ep_id, speaker=name, session=f"{name}-s{i // 10}", namespace=NS)
                added[ep_id] = text
                if i % 5 == 0:
                    m.add(text, id=ep_id, speaker=name, session=f"{name}-s{i // 10}", namespace=NS)
                    repeats += 1
            except Exception as exc:
                errors.append(f"{name} add {ep_id}: {type(exc).__name__}: {exc}")
            i += 1
    return {"added": added, "repeats": repeats, "errors": errors}


def searcher(db: str, recipe: str, seconds: float, name: str) -> dict[str, Any]:
    """Search with ``recipe`` until the time is up; how many, and the errors."""
    from memstrata.facade import Memory

    queries = synthetic_queries(200, seed=3)
    errors: list[str] = []
    done = 0
    with Memory.open(db, recipe=recipe, **QUEUED) as m:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                m.search(queries[done % len(queries)], namespace=NS, k=5)
                done += 1
            except Exception as exc:
                errors.append(f"{name} search: {type(exc).__name__}: {exc}")
    return {"searches": done, "errors": errors}


def _python(role: str, db: str, recipe: str, seconds: float, name: str) -> list[str]:
    module = "memstrata.eval.faults_concurrency"
    return [sys.executable, "-m", module, role, db, recipe, str(seconds), name]


def _clean(stderr: str) -> bool:
    return "Traceback" not in stderr and "error" not in stderr.lower()


def run(
    workdir: Path,
    env: Mapping[str, str],
    embedder: Embedder,
    *,
    recipe: str = "mnemis",
    seconds: float = 10.0,
    batch_size: int = 8,
    site: Site | None = None,
) -> ConcurrencyReport:
    """Writers, workers and a searcher for ``seconds``, then a drain and the checks, on
    a new store of ``site`` (default: a SQLite file in ``workdir``)."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    db = (site or SQLiteSite(workdir)).new("concurrency")
    child_env = {**hermetic_env(env, batch_size), "MEMSTRATA_BUILD__MODE": "queue"}
    seeded = conversation(SEED_TURNS + 2)
    report = ConcurrencyReport(recipe=recipe, seconds=seconds)

    async def seed() -> None:
        async with AsyncMemory.open(db, embedder=embedder, **QUIET) as m:
            await m.add_many(seeded, namespace=NS)

    asyncio.run(seed())
    worker_cmd = [sys.executable, "-m", "memstrata", "worker", "--db", db]
    worker_cmd += ["--recipe", recipe]
    logs: dict[str, tuple[subprocess.Popen[str], Path, Path]] = {}

    def start(name: str, cmd: list[str]) -> None:
        out, err = workdir / f"{name}.out", workdir / f"{name}.err"
        with out.open("w") as o, err.open("w") as e:
            logs[name] = (
                subprocess.Popen(cmd, env=child_env, stdout=o, stderr=e, text=True),
                out,
                err,
            )

    for i in range(WORKERS):
        start(f"worker{i}", worker_cmd)
    for i in range(WRITERS):
        start(f"writer{i}", _python("writer", db, recipe, seconds, f"w{i}"))
    start("searcher", _python("searcher", db, recipe, seconds, "searcher"))

    added: dict[str, str] = {}
    for name, (proc, out, err) in logs.items():
        if name.startswith("worker"):
            continue
        status = proc.wait(timeout=seconds + 600)
        stderr = err.read_text()
        if status != 0 or not _clean(stderr):
            report.errors.append(f"{name}: exit {status}: {stderr[-600:]}")
            continue
        result = json.loads(out.read_text().strip().splitlines()[-1])
        report.errors += result["errors"]
        added.update(result.get("added", {}))
        report.repeated_adds += result.get("repeats", 0)
        report.searches += result.get("searches", 0)
    for name, (proc, _, _err) in logs.items():
        if name.startswith("worker"):
            proc.send_signal(signal.SIGTERM)
    for name, (proc, _, err) in logs.items():
        if name.startswith("worker"):
            status = proc.wait(timeout=600)
            stderr = err.read_text()
            # 130: stopped by the SIGTERM, as asked; the stop notice is not an error
            if status not in (0, 130) or "Traceback" in stderr:
                report.errors.append(f"{name}: exit {status}: {stderr[-600:]}")
    drain = subprocess.run(
        [*worker_cmd, "--once"], env=child_env, capture_output=True, text=True, timeout=900
    )
    if drain.returncode != 0 or "0 failed" not in drain.stdout:
        report.errors.append(f"drain: exit {drain.returncode}: {drain.stdout + drain.stderr}")
    report.adds = len(added)
    expected = {**expected_lines(seeded), **{i: {"text": t} for i, t in added.items()}}

    async def check() -> None:
        async with AsyncMemory.open(db, embedder=embedder, **QUIET) as m:
            stored = await asyncio.to_thread(all_episodes, m.store, NS)
            counts = Counter(ep.id for ep in stored)
            texts = {ep.id: ep.text for ep in stored}
            report.visible_once = sum(
                1 for i, t in added.items() if counts[i] == 1 and texts[i] == t
            )
            report.episodes = len(stored)
            found = await asyncio.to_thread(check_store, m.store, NS, expected, [recipe])
            design = await design_problems(m, NS, [recipe])
            report.problems = {**found.problems(), **({"design": design} if design else {})}
            (stats,) = await asyncio.to_thread(m.store.stats, NS)
            report.built = stats.builds.get(recipe, {}).get("done", 0)

    asyncio.run(check())
    return report


def as_json(report: ConcurrencyReport) -> dict[str, Any]:
    return {**asdict(report), "ok": report.ok}


def main(argv: list[str]) -> int:
    role, db, recipe, seconds, name = argv
    job = {"writer": writer, "searcher": searcher}[role]
    try:
        result = job(db, recipe, float(seconds), name)
    except Exception:
        traceback.print_exc()
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
