"""``memstrata bench faults``: SIGKILL real ``memstrata`` processes mid-work, finish the
work, and count what was lost, duplicated or left broken.

Each operation runs as its own process on a real store (a SQLite file, or a database on a
PostgreSQL server: :mod:`memstrata.eval.sites`), and is killed (SIGKILL, no clean-up of
any kind) either once it has made observable progress (episodes committed, done marks
written, the removal committed: the store is polled read-only) or after a
seeded random delay (which also lands in start-up and schema creation). Then the work is
finished the way a user would: the same command again (an import must report what is
already there; a delete, the ids it no longer finds), then a build of each recipe.
Last, :mod:`memstrata.eval.invariants` and the builders' own checks read the store.

Operations: ``import`` of a JSONL conversation, ``build`` of each recipe (heuristic
tier), the queue ``worker``, ``update`` and ``delete`` of episodes every design was built
from (their repairs run after the removal's transaction, so a kill lands between them).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from memstrata.embed.base import Embedder
from memstrata.eval.bench_scale import synthetic_turns
from memstrata.eval.invariants import Findings, check_store, design_problems, expected_lines
from memstrata.eval.sites import Probe, Site, SQLiteSite
from memstrata.memory import AsyncMemory
from memstrata.opening import Opening
from memstrata.wording import plural

RECIPES = ("default", "mnemis", "personalai", "higmem", "memtree", "mindgraph")
BUILT = tuple(r for r in RECIPES if r != "default")  # the recipes that build structures
OPERATIONS = ("import", *(f"build:{r}" for r in RECIPES), "worker", "update", "delete")
NS = "faults"
# planted turns: removed by the update and delete runs, so their words must vanish
MOVED, MOVED_OLD = "moved", "Big news: I got posted to Lancaster for the new job in May."
MOVED_NEW = "Big news: I got posted to Kendal for the new job in May."
GONE = "gone"
GONE_TEXT = (
    "My cousin Zebulon adopted a ferret called Quillfeather last week, in Wolverhampton. "
    "Zebulon says Quillfeather already knows three tricks."
)
GONE_WORDS = ("Zebulon", "Quillfeather", "Wolverhampton")
#: configuration of the in-process checks: no LLM, nothing built on open
QUIET: dict[str, Any] = {"llm.kind": "none", "build.mode": "manual"}
KILL_WAIT_S = 300.0  # a safety net for a process that never shows progress


def conversation(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` synthetic chat turns as import lines, two planted ones in the middle."""
    lines = []
    for turn in synthetic_turns(n - 2, seed=seed):
        at = turn.pop("occurred_at")
        lines.append({**turn, "at": at.isoformat()})
    mid = lines[len(lines) // 2]
    planted = [
        {**mid, "id": GONE, "text": GONE_TEXT, "speaker": "Tomas"},
        {**mid, "id": MOVED, "text": MOVED_OLD, "speaker": "Maya"},
    ]
    return lines[: len(lines) // 2] + planted + lines[len(lines) // 2 :]


def hermetic_env(base: Mapping[str, str], batch_size: int) -> dict[str, str]:
    """The caller's environment without MEMSTRATA_* (no user config, no LLM), small
    batches so a build has many commit points, and nothing built inline."""
    env = {k: v for k, v in base.items() if not k.startswith("MEMSTRATA_")}
    env.update(
        MEMSTRATA_LLM__KIND="none",
        MEMSTRATA_BUILD__MODE="manual",
        MEMSTRATA_BUILD__BATCH_SIZE=str(batch_size),
    )
    return env


def removed(probe: Probe, total: int) -> int:
    """Episodes gone from a store that held ``total``."""
    return total - probe.episodes()


@dataclass
class Trigger:
    """When to kill: once ``probe()`` reaches ``at``, or after ``delay`` seconds."""

    label: str
    probe: Callable[[], int] | None = None
    at: int = 0
    delay: float | None = None


@dataclass
class KillRun:
    """One kill and its recovery, with what the invariants found."""

    operation: str
    run: int
    trigger: str
    killed: bool = False  # False: the process had finished before the trigger
    progress_at_kill: int = 0
    repairs_at_kill: int = 0  # removals logged but not yet repaired when it died
    recovered: bool = False
    lost: int = 0
    duplicates: int = 0
    orphans: int = 0
    invariant_failures: int = 0
    problems: dict[str, list[str]] = field(default_factory=dict)
    divergence: dict[str, int] = field(default_factory=dict)


def kill_when(
    cmd: Sequence[str], env: Mapping[str, str], trigger: Trigger, log: Path
) -> tuple[bool, int]:
    """Start ``cmd``, SIGKILL it at the trigger; (killed, progress seen at the kill)."""
    with log.open("w") as out:
        proc = subprocess.Popen(list(cmd), env=dict(env), stdout=out, stderr=subprocess.STDOUT)
        start = time.monotonic()
        seen = 0
        try:
            while proc.poll() is None:
                if trigger.probe is not None:
                    seen = trigger.probe()
                    if seen >= trigger.at:
                        break
                elif trigger.delay is not None and time.monotonic() - start >= trigger.delay:
                    break
                if time.monotonic() - start > KILL_WAIT_S:
                    break
                time.sleep(0.005)
            if proc.poll() is not None:
                return False, seen
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            return True, seen
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


class Harness:
    """Template stores, kill runs and their checks in one working directory.

    ``env`` is the environment of the child processes (it must let them import this
    memstrata); ``embedder`` the one the in-process checks open the store with."""

    def __init__(
        self,
        workdir: Path,
        env: Mapping[str, str],
        embedder: Embedder,
        *,
        turns: int = 120,
        batch_size: int = 8,
        seed: int = 7,
        site: Site | None = None,
    ) -> None:
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.site: Site = site or SQLiteSite(self.dir)
        self.env = hermetic_env(env, batch_size)
        self.embedder = embedder
        self.lines = conversation(turns, seed)
        self.turns = len(self.lines)
        self.expected = expected_lines(self.lines)
        self.data = self.dir / "conversation.jsonl"
        self.data.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        self.seconds: dict[str, float] = {}  # uninterrupted wall time per operation
        self.reference: dict[str, dict[str, int]] = {}  # builder -> records per kind
        self._imported: str | None = None
        self._built: str | None = None
        self._count = 0
        self._probes: dict[str, Probe] = {}

    # processes ----------------------------------------------------------------------
    def cli(self, db: str, *args: str) -> list[str]:
        return [sys.executable, "-m", "memstrata", *args[:1], "--db", db, *args[1:]]

    def run(self, cmd: Sequence[str], env: Mapping[str, str] | None = None) -> tuple[int, str]:
        """Run to the end; (exit status, output)."""
        done = subprocess.run(
            list(cmd), env=dict(env or self.env), capture_output=True, text=True, timeout=900
        )
        return done.returncode, done.stdout + done.stderr

    def timed(self, key: str, cmd: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        t0 = time.monotonic()
        status, output = self.run(cmd, env)
        if status != 0:
            raise RuntimeError(f"{' '.join(cmd[3:])} failed ({status}): {output[-2000:]}")
        self.seconds[key] = time.monotonic() - t0

    def fresh(self, name: str, template: str | None = None) -> str:
        """A new store (a copy of ``template`` if given) for one run."""
        self._count += 1
        return self.site.new(f"{self._count:04d}-{name.replace(':', '-')}", template)

    def log(self, db: str) -> Path:
        """Where the output of a process on ``db`` goes."""
        return self.dir / f"{db.rsplit('/', 1)[-1].removesuffix('.db')}.log"

    def _probe(self, db: str) -> Probe:
        """One probe (one connection) per store while it is being killed."""
        return self._probes.setdefault(db, Probe(db, NS))

    # templates ----------------------------------------------------------------------
    def imported(self) -> str:
        """A store with the conversation imported and nothing built."""
        if self._imported is None:
            db = self.site.new("imported")
            self.timed("import", self.cli(db, "import", str(self.data), "-n", NS))
            self._imported = db
        return self._imported

    def built(self) -> str:
        """The imported store with every recipe built: the reference structures, and the
        starting point of updates and deletes."""
        if self._built is None:
            db = self.site.new("built", self.imported())
            for recipe in RECIPES:
                self.timed(f"build:{recipe}", self.build_cmd(db, recipe))
            self._built = db
            self.reference = self.record_counts(db)
        return self._built

    def build_cmd(self, db: str, recipe: str) -> list[str]:
        return self.cli(db, "build", "-n", NS, "--recipe", recipe, "--tier", "heuristic")

    def record_counts(self, db: str) -> dict[str, dict[str, int]]:
        async def read() -> dict[str, dict[str, int]]:
            async with self.memory(db) as m:
                (stats,) = await asyncio.to_thread(m.store.stats, NS)
                return stats.records_by_builder

        return asyncio.run(read())

    def memory(self, db: str) -> Opening[AsyncMemory]:
        return AsyncMemory.open(db, embedder=self.embedder, **QUIET)

    # one kill -----------------------------------------------------------------------
    def kill(
        self, operation: str, run: int, rng: random.Random, mode: str | None = None
    ) -> KillRun:
        """Kill ``operation`` once (seeded by ``rng``), finish the work, check it.
        ``mode``: "progress" or "delay" (default: a delay in about a third of the runs,
        and always for a recipe that builds nothing)."""
        kind, _, recipe = operation.partition(":")
        by_delay = mode == "delay" if mode else rng.random() < 0.3
        if kind == "import":
            db = self.fresh(operation)
            cmd = self.cli(db, "import", str(self.data), "-n", NS, "--batch-size", "16")
            probe: Callable[[], int] = self._probe(db).episodes
            at = rng.randint(1, self.turns - 1)
        elif kind in ("build", "worker"):
            recipe = recipe or BUILT[run % len(BUILT)]
            db = self.fresh(f"{kind}-{recipe}", self.imported())
            cmd = self.build_cmd(db, recipe)
            if kind == "worker":
                cmd = self.cli(db, "worker", "--recipe", recipe)
            builder = recipe if recipe in BUILT else ""
            probe = partial(self._probe(db).done, builder)
            by_delay = by_delay or not builder
            if mode == "progress" and not builder:
                raise ValueError(f"{recipe} builds nothing: no progress to kill at")
            at = rng.randint(1, self.turns - 1)
        elif kind == "update":
            db = self.fresh(operation, self.built())
            cmd = self.cli(db, "update", "-n", NS, "--id", MOVED, MOVED_NEW)
            probe, at = partial(self._probe(db).has_text, MOVED, MOVED_NEW), 1
        elif kind == "delete":
            db = self.fresh(operation, self.built())
            ids = self.delete_ids(rng)
            cmd = self.cli(db, "delete", "-n", NS, "--yes", *(a for i in ids for a in ("--id", i)))
            probe, at = partial(removed, self._probe(db), self.turns), len(ids)
        else:
            raise ValueError(f"unknown operation {operation!r}; known: {', '.join(OPERATIONS)}")
        if by_delay:
            delay = rng.uniform(0.0, max(self.duration(kind, recipe, cmd, db), 0.5))
            trigger = Trigger(f"after {delay:.2f} s", delay=delay)
        else:
            trigger = Trigger(f"at progress {at}", probe=probe, at=at)
        result = KillRun(operation=operation, run=run, trigger=trigger.label)
        try:
            result.killed, result.progress_at_kill = kill_when(cmd, self.env, trigger, self.log(db))
            result.repairs_at_kill = self._probe(db).repairs()
        finally:
            self._probes.pop(db, Probe(db)).close()
        notes = self.finish(kind, recipe, db, cmd)
        findings, design = self.check(kind, recipe, db, cmd)
        result.recovered = not notes
        result.lost = len(findings.lost)
        result.duplicates = len(findings.duplicates)
        result.orphans = len(findings.orphans)
        result.invariant_failures = findings.invariant_failures + len(design) + len(notes)
        result.problems = {**findings.problems(), **({"design": design} if design else {})}
        if notes:
            result.problems["recovery"] = notes
        if kind == "build" and recipe in BUILT and self.reference:
            got = self.record_counts(db).get(recipe, {})
            want = self.reference.get(recipe, {})
            result.divergence = {
                k: got.get(k, 0) - want.get(k, 0)
                for k in sorted(set(got) | set(want))
                if got.get(k, 0) != want.get(k, 0)
            }
        return result

    def duration(self, kind: str, recipe: str, cmd: Sequence[str], db: str) -> float:
        """Uninterrupted wall time of the operation, the range of a random delay (the
        update and delete are timed once, on a copy of ``db``)."""
        key = f"build:{recipe}" if kind == "worker" else (f"{kind}:{recipe}" if recipe else kind)
        if key not in self.seconds:
            copy = self.fresh(f"time-{kind}", db)
            self.timed(key, [copy if a == db else a for a in cmd])
        return self.seconds[key]

    def delete_ids(self, rng: random.Random) -> list[str]:
        others = [line["id"] for line in self.lines if line["id"] not in (GONE, MOVED)]
        return [GONE, *rng.sample(others, 2)]

    # finishing the work -------------------------------------------------------------
    def finish(self, kind: str, recipe: str, db: str, cmd: Sequence[str]) -> list[str]:
        """Do what a user does after the crash; what did not go as it should."""
        notes: list[str] = []
        if kind == "import":
            probe = Probe(db, NS)
            before = probe.episodes()
            probe.close()
            status, output = self.run(cmd)
            new = self.turns - before
            want = f"imported {plural(new, 'new episode')}, {before} already present"
            if status != 0 or want not in output:
                notes.append(f"import again: exit {status}, expected {want!r}: {output[-400:]}")
            return notes
        if kind == "worker":
            status, output = self.run([*cmd, "--once"])
            if status != 0:
                notes.append(f"worker --once: exit {status}: {output[-400:]}")
            return notes
        if kind == "build":
            status, output = self.run(cmd)
            if status != 0:
                notes.append(f"build again: exit {status}: {output[-400:]}")
            return notes
        status, output = self.run(cmd)  # the same update or delete again
        if kind == "update" and status != 0:
            notes.append(f"update again: exit {status}: {output[-400:]}")
        if kind == "delete" and status not in (0, 1):
            notes.append(f"delete again: exit {status}: {output[-400:]}")
        for name in BUILT:  # drains repair what the removal left, then fold in the rest
            status, output = self.run(self.build_cmd(db, name))
            if status != 0:
                notes.append(f"build {name}: exit {status}: {output[-400:]}")
        return notes

    def check(
        self, kind: str, recipe: str, db: str, cmd: Sequence[str]
    ) -> tuple[Findings, list[str]]:
        """The invariants of the finished store, and the builders' own checks."""
        expected = dict(self.expected)
        gone: tuple[str, ...] = ()
        builders: tuple[str, ...] = ()
        if kind in ("build", "worker") and recipe in BUILT:
            builders = (recipe,)
        elif kind in ("update", "delete"):
            builders = BUILT
        if kind == "update":
            expected[MOVED] = {**expected[MOVED], "text": MOVED_NEW}
            gone = ("Lancaster",)
        elif kind == "delete":
            removed = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--id"]
            expected = {k: v for k, v in expected.items() if k not in removed}
            gone = GONE_WORDS

        async def read() -> tuple[Findings, list[str]]:
            async with self.memory(db) as m:
                found = await asyncio.to_thread(
                    check_store, m.store, NS, expected, builders, gone_words=gone
                )
                if kind == "update":
                    versions = await m.history(MOVED, namespace=NS)
                    if len(versions) != 1:
                        found.duplicates.append(f"{MOVED} has {len(versions)} old versions")
                design = await design_problems(m, NS, builders)
                return found, design

        return asyncio.run(read())


def summarize(runs: Sequence[KillRun]) -> list[dict[str, Any]]:
    """One row per operation: kills, recovered, and the sums of what went wrong."""
    rows: dict[str, dict[str, Any]] = {}
    for r in runs:
        row = rows.setdefault(
            r.operation,
            {
                "operation": r.operation,
                "runs": 0,
                "kills": 0,
                "recovered": 0,
                "lost": 0,
                "duplicates": 0,
                "orphans": 0,
                "invariant_failures": 0,
            },
        )
        row["runs"] += 1
        row["kills"] += int(r.killed)
        row["recovered"] += int(r.recovered)
        for key in ("lost", "duplicates", "orphans", "invariant_failures"):
            row[key] += getattr(r, key)
    return list(rows.values())


def kill_runs(
    harness: Harness,
    operations: Sequence[str],
    runs: int,
    seed: int,
    progress: Callable[[int], None] | None = None,
) -> list[KillRun]:
    """``runs`` kills of each operation, each seeded from ``seed`` and its place."""
    out = []
    for op in operations:
        for i in range(runs):
            rng = random.Random(f"{seed}:{op}:{i}")
            out.append(harness.kill(op, i, rng))
            if progress is not None:
                progress(1)
    return out


def as_json(runs: Sequence[KillRun]) -> list[dict[str, Any]]:
    return [asdict(r) for r in runs]
