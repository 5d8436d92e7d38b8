"""The fault harness on PostgreSQL: real worker processes on one database of the test
session's server (tests/pgtest.py), killed with SIGKILL mid-build or run side by side.
Counts are asserted, never times."""

from __future__ import annotations

import random
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import psycopg
import pytest

import pgtest
from memstrata.embed import MiniLMEmbedder
from memstrata.eval import faults_concurrency
from memstrata.eval.faults import BUILT, NS, Harness, Trigger, kill_when
from memstrata.eval.sites import PostgresSite, Probe
from memstrata.store import open_store
from memstrata.store.sql.common import process_alive


@pytest.fixture(scope="module")
def site() -> Iterator[PostgresSite]:
    made = PostgresSite(pgtest.local_server().url("postgres"), prefix="faults")
    yield made
    made.close()


@pytest.fixture(scope="module")
def pg_harness(
    tmp_path_factory: pytest.TempPathFactory,
    embedder: MiniLMEmbedder,
    child_env: dict[str, str],
    site: PostgresSite,
) -> Harness:
    """24 turns in batches of 4, as the SQLite kill tests: six commit points per build."""
    return Harness(
        tmp_path_factory.mktemp("pgfaults"), child_env, embedder, turns=24, batch_size=4, site=site
    )


def test_a_worker_killed_mid_build_loses_its_lease_and_the_next_one_finishes(
    pg_harness: Harness,
) -> None:
    h = pg_harness
    db = h.fresh("worker-kill", h.imported())
    cmd = h.cli(db, "worker", "--recipe", "mnemis")
    probe = Probe(db, NS)
    try:
        trigger = Trigger("two batches done", probe=partial(probe.done, "mnemis"), at=8)
        killed, seen = kill_when(cmd, h.env, trigger, h.log(db))
    finally:
        probe.close()
    assert killed and 8 <= seen < h.turns  # killed mid-build, holding the lease
    with psycopg.connect(db) as conn:
        (owner,) = conn.execute("SELECT owner FROM build_leases").fetchone() or ("",)
    assert owner and not process_alive(owner)  # the dead worker's lease row is still there
    store = open_store(db)
    try:
        assert store.lease_holder(NS, "mnemis") is None  # ... and counts for nothing
    finally:
        store.close()
    assert h.finish("worker", "mnemis", db, cmd) == []  # the next worker takes it over
    findings, design = h.check("worker", "mnemis", db, cmd)
    assert findings.ok and design == [], (findings.problems(), design)
    probe = Probe(db, NS)
    assert probe.done("mnemis") == h.turns
    probe.close()


@pytest.mark.slow
@pytest.mark.parametrize("recipe", ["memtree"])
def test_a_killed_worker_is_finished_by_the_next_one_on_postgres(
    pg_harness: Harness, recipe: str
) -> None:
    run = pg_harness.kill("worker", BUILT.index(recipe), random.Random(recipe), mode="progress")
    assert run.operation == "worker" and run.killed and run.progress_at_kill > 0, run
    assert run.recovered, run.problems
    assert (run.lost, run.duplicates, run.orphans, run.invariant_failures) == (0, 0, 0, 0)


@pytest.mark.slow
def test_writers_and_two_workers_on_one_postgres_store(
    tmp_path: Path, embedder: MiniLMEmbedder, child_env: dict[str, str], site: PostgresSite
) -> None:
    report = faults_concurrency.run(
        tmp_path, child_env, embedder, recipe="mnemis", seconds=10, site=site
    )
    assert report.errors == []
    assert report.adds > 0 and report.repeated_adds > 0 and report.searches > 0
    assert report.visible_once == report.adds  # each add stored once, with its text
    assert report.episodes == report.adds + faults_concurrency.SEED_TURNS + 2
    assert report.built == report.episodes  # every episode built once, by one worker
    assert report.problems == {}  # no record doubled, orphaned or dangling
