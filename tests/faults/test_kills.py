"""SIGKILL a real ``memstrata`` process mid-work, finish the work, check the store.

Every test kills at a point the store shows (episodes or done marks committed, the
removal committed) unless it says otherwise, asserts the process was still running then,
and asserts on what the finished store holds: no episode lost, altered or doubled, no
record duplicated, orphaned or pointing at nothing, nothing left queued or unrepaired,
each design's own checks clean.
"""

from __future__ import annotations

import os
import random
import socket

import pytest

from memstrata.eval.faults import BUILT, GONE, NS, Harness, KillRun, Probe, Trigger, kill_when
from memstrata.store import SQLiteStore


def assert_recovered(run: KillRun) -> None:
    assert run.recovered, run.problems
    assert (run.lost, run.duplicates, run.orphans, run.invariant_failures) == (0, 0, 0, 0), (
        run.problems
    )
    assert run.problems == {}


@pytest.mark.parametrize("seed", [1, 2])
def test_a_killed_import_is_finished_by_importing_again(harness: Harness, seed: int) -> None:
    run = harness.kill("import", seed, random.Random(seed), mode="progress")
    assert run.killed and run.progress_at_kill > 0, run  # still running: mid-build or finishing
    assert_recovered(run)  # the re-import reported exactly what was already there


def test_an_import_killed_at_a_random_moment_is_finished_too(harness: Harness) -> None:
    """A delay: the kill may land in start-up or in the store's creation."""
    run = harness.kill("import", 0, random.Random(3), mode="delay")
    assert_recovered(run)


@pytest.mark.parametrize("recipe", BUILT)
def test_a_killed_build_leaves_nothing_half_built(harness: Harness, recipe: str) -> None:
    run = harness.kill(f"build:{recipe}", 0, random.Random(recipe), mode="progress")
    assert run.killed and run.progress_at_kill > 0, run  # still running: mid-build or finishing
    assert_recovered(run)


def test_a_build_of_a_recipe_without_builders_survives_a_kill(harness: Harness) -> None:
    run = harness.kill("build:default", 0, random.Random(5), mode="delay")
    assert_recovered(run)


@pytest.mark.slow
@pytest.mark.parametrize("recipe", ["mnemis", "memtree"])
def test_a_killed_worker_is_finished_by_the_next_one(harness: Harness, recipe: str) -> None:
    run = harness.kill("worker", BUILT.index(recipe), random.Random(recipe), mode="progress")
    assert run.killed and run.progress_at_kill > 0, run  # still running: mid-build or finishing
    assert_recovered(run)


@pytest.mark.slow
@pytest.mark.parametrize("operation", ["update", "delete"])
def test_a_killed_removal_is_finished_by_running_it_again(harness: Harness, operation: str) -> None:
    run = harness.kill(operation, 0, random.Random(operation), mode="progress")
    assert run.killed, run
    assert_recovered(run)


@pytest.mark.slow
def test_a_delete_killed_between_its_transaction_and_its_repairs(harness: Harness) -> None:
    """The removal is committed, the repairs are not: the test holds Mnemis's build lease
    so the delete waits for it, and is killed while it waits. The log of what each
    builder lost is durable, so the next builds repair from it."""
    db = harness.fresh("delete-held", harness.built())
    store = SQLiteStore(db)
    owner = f"{socket.gethostname()}:{os.getpid()}:faults-test"
    try:
        assert store.acquire_lease(NS, "mnemis", owner, 600)
        ids = harness.delete_ids(random.Random(9))
        cmd = harness.cli(db, "delete", "-n", NS, "--yes", *(a for i in ids for a in ("--id", i)))
        trigger = Trigger("removal committed", probe=Probe(db).repairs, at=1)
        killed, _ = kill_when(cmd, harness.env, trigger, harness.log(db))
        assert killed
        backlog = store.repair_backlog(NS)
        assert backlog.get("mnemis"), backlog  # its repairs never ran
        assert store.existing_ids(NS, [GONE]) == set()  # the removal did
    finally:
        store.release_lease(NS, "mnemis", owner)
        store.close()
    assert harness.finish("delete", "", db, cmd) == []
    findings, design = harness.check("delete", "", db, cmd)
    assert findings.ok and design == [], (findings.problems(), design)
