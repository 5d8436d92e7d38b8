"""Conformance tests of the build queue part of the ``Store`` interface: progress marks,
failures and retries, leases.

Run on every backend of ``test_conformance.BACKENDS`` (kept apart only for length). Time is
looked into through the ``now`` argument of ``pending_episodes``, and a lease's expiry
through a test clock (:class:`waiting.Clock`) that moves the wall clock the store reads,
rather than slept through.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_conformance import prep

from memstrata.designs.personalai.records import Thesis
from memstrata.models import Entity, Episode, Span
from memstrata.store import SQLiteStore, Store
from waiting import Clock

HOST = socket.gethostname()
HOUR = 3600.0


# helpers --------------------------------------------------------------------------------
def add(store: Store, namespace: str, n: int) -> list[Episode]:
    """Episodes e0..e{n-1}, in insertion order."""
    ids = [f"e{i}" for i in range(n)]
    store.add_episodes(namespace, [prep(i, f"turn {i} of the chat") for i in ids])
    return store.get_episodes(namespace, ids)


def pending(store: Store, builder: str = "b", namespace: str = "ns", **kw) -> list[str]:
    return [e.id for e in store.pending_episodes(namespace, builder, **kw)]


def done(store: Store, keys: list[int], builder: str = "b", namespace: str = "ns") -> None:
    store.write_records(namespace, [], built=(builder, keys))


def fail(store: Store, key: int, error: str = "boom", max_attempts: int = 3, backoff: float = 60):
    store.mark_failed("ns", "b", [(key, error)], max_attempts, backoff)


def owner(token: str, pid: int | None = None, host: str = HOST) -> str:
    return f"{host}:{os.getpid() if pid is None else pid}:{token}"


def dead_pid() -> int:
    """The pid of a process of this host that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# progress marks ---------------------------------------------------------------------------
def test_pending_episodes_are_those_without_a_done_mark_in_insertion_order(store: Store) -> None:
    eps = add(store, "ns", 6)
    add(store, "other", 2)
    keys = [e.key for e in eps]
    assert keys == sorted(keys)
    assert pending(store) == [f"e{i}" for i in range(6)]
    assert [e.key for e in store.pending_episodes("ns", "b")] == keys
    assert store.pending_episodes("ns", "b")[0].text == "turn e0 of the chat"
    assert pending(store, limit=2) == ["e0", "e1"]
    assert pending(store, after_key=keys[2]) == ["e3", "e4", "e5"]
    assert pending(store, after_key=keys[2], limit=2) == ["e3", "e4"]
    assert pending(store, after_key=keys[-1]) == []
    assert store.pending_count("ns", "b") == 6

    done(store, [keys[0], keys[2]])
    assert pending(store) == ["e1", "e3", "e4", "e5"]
    assert pending(store, after_key=keys[0], limit=2) == ["e1", "e3"]
    assert store.pending_count("ns", "b") == 4
    assert store.built_keys("ns", "b") == {keys[0], keys[2]}
    # marks belong to one builder and one namespace
    assert store.pending_count("ns", "c") == 6 and store.built_keys("ns", "c") == set()
    assert pending(store, namespace="other") == ["e0", "e1"]

    # records and the done mark of their episode in one write
    ent = Entity(namespace="ns", name="Ana", sources=[Span(episode="e1", start=0, end=4)])
    store.write_records("ns", [ent], built=("b", [keys[1]]))
    assert [r.id for r in store.get_records("ns", "entity", builder=None)] == [ent.id]
    assert pending(store) == ["e3", "e4", "e5"]
    assert store.pending_count("ns", "b") == 3
    done(store, [keys[1]])  # marking again changes nothing
    assert store.pending_count("ns", "b") == 3

    # a namespace that does not exist has no queue
    assert store.pending_episodes("nowhere", "b") == []
    assert store.pending_count("nowhere", "b") == 0
    assert store.built_keys("nowhere", "b") == set()


def test_reset_build_forgets_progress_and_drops_only_the_builders_own_records(
    store: Store,
) -> None:
    keys = [e.key for e in add(store, "ns", 3)]
    ent = Entity(namespace="ns", name="Ana", sources=[Span(episode="e0", start=0, end=4)])
    thesis = Thesis(namespace="ns", text="b's thesis")
    store.write_records("ns", [ent, thesis], built=("b", keys[:2]))
    # another builder's entity of the same kind, in the same namespace
    theirs = Entity(namespace="ns", name="Ana", sources=[Span(episode="e0", start=0, end=4)])
    store.write_records("ns", [theirs], built=("c", keys))
    fail(store, keys[2])
    store.reset_build("ns", "b")
    assert pending(store) == ["e0", "e1", "e2"]
    assert store.built_keys("ns", "b") == set() and store.build_failures("ns", "b") == []
    assert store.get_records("ns", "entity", builder="b") == []
    assert store.get_records("ns", "thesis", builder=None) == []
    (kept,) = store.get_records("ns", "entity", builder=None)
    assert (kept.id, kept.builder) == (theirs.id, "c")
    assert store.built_keys("ns", "c") == set(keys)  # other builders keep their progress
    store.reset_build("nowhere", "b")


# failures and retries ---------------------------------------------------------------------
def test_mark_failed_hides_an_episode_until_its_retry_time(store: Store) -> None:
    keys = [e.key for e in add(store, "ns", 3)]
    before = time.time()
    fail(store, keys[1], "Timeout: slow", backoff=60)
    after = time.time()
    assert pending(store) == ["e0", "e2"]
    assert pending(store, now=after + 59) == ["e0", "e2"]
    assert pending(store, now=after + 61) == ["e0", "e1", "e2"]
    assert store.pending_count("ns", "b") == 3  # not done, so still counted
    (f,) = store.build_failures("ns")
    assert (f.episode, f.builder, f.status, f.attempts, f.error) == (
        "e1",
        "b",
        "failed",
        1,
        "Timeout: slow",
    )
    assert f.retry_at is not None and before + 60 <= f.retry_at <= after + 60

    # the wait doubles with every attempt
    fail(store, keys[1], "again", backoff=60)
    assert pending(store, now=after + 61) == ["e0", "e2"]
    assert pending(store, now=time.time() + 121) == ["e0", "e1", "e2"]
    (f,) = store.build_failures("ns")
    assert (f.status, f.attempts, f.error) == ("failed", 2, "again")

    # the last allowed attempt makes it dead: out of the queue, however long one waits
    fail(store, keys[1], "gave up", backoff=60)
    (f,) = store.build_failures("ns")
    assert (f.status, f.attempts, f.error) == ("dead", 3, "gave up")
    assert pending(store, now=time.time() + 10**9) == ["e0", "e2"]
    assert store.pending_count("ns", "b") == 3
    assert store.stats("ns")[0].builds == {"b": {"done": 0, "failed": 0, "dead": 1}}

    # other builders do not see the failures of this one
    assert pending(store, builder="c") == ["e0", "e1", "e2"]
    store.mark_failed("ns", "b", [], 3, 60)
    store.mark_failed("nowhere", "b", [(keys[0], "x")], 3, 60)
    assert pending(store) == ["e0", "e2"]


def test_mark_failed_marks_a_batch_and_keeps_long_errors_bounded(store: Store) -> None:
    keys = [e.key for e in add(store, "ns", 4)]
    store.mark_failed("ns", "b", [(keys[0], "x" * 5000), (keys[2], "short")], 1, 60)
    assert pending(store, now=time.time() + 10**9) == ["e1", "e3"]
    failures = store.build_failures("ns", "b")
    assert [(f.episode, f.status, f.attempts) for f in failures] == [
        ("e0", "dead", 1),
        ("e2", "dead", 1),
    ]
    assert 0 < len(failures[0].error) <= 1000


def test_retry_failed_brings_failed_and_dead_back(store: Store) -> None:
    keys = [e.key for e in add(store, "ns", 4)]
    store.mark_failed("ns", "b", [(keys[0], "dead now")], 1, HOUR)
    store.mark_failed("ns", "b", [(keys[1], "later")], 5, HOUR)
    store.mark_failed("ns", "c", [(keys[2], "other builder")], 5, HOUR)
    assert pending(store) == ["e2", "e3"]
    assert pending(store, builder="c") == ["e0", "e1", "e3"]

    assert store.retry_failed("ns", "b") == 2
    assert pending(store) == ["e0", "e1", "e2", "e3"]
    assert pending(store, builder="c") == ["e0", "e1", "e3"]  # the filter held
    assert [(f.episode, f.attempts) for f in store.build_failures("ns", "b")] == [
        ("e0", 0),
        ("e1", 0),
    ]
    assert all(f.status == "failed" for f in store.build_failures("ns", "b"))
    # attempts start over: the next failure is the first again, not the last
    store.mark_failed("ns", "b", [(keys[0], "once more")], 2, HOUR)
    (f0, _) = store.build_failures("ns", "b")
    assert (f0.episode, f0.status, f0.attempts) == ("e0", "failed", 1)

    # without a builder, every builder's failures come back
    assert store.retry_failed("ns") == 3
    assert pending(store, builder="c") == ["e0", "e1", "e2", "e3"]
    assert store.retry_failed("nowhere") == 0
    done(store, keys)
    assert store.retry_failed("ns", "b") == 0  # done marks are not failures


def test_build_failures_lists_status_attempts_and_error(store: Store) -> None:
    keys = [e.key for e in add(store, "ns", 5)]
    store.mark_failed("ns", "b", [(keys[3], "late"), (keys[1], "early")], 3, 60)
    store.mark_failed("ns", "b", [(keys[4], "fatal")], 1, 60)
    store.mark_failed("ns", "c", [(keys[0], "c's")], 3, 60)
    done(store, [keys[2]])

    rows = [
        (f.episode, f.builder, f.status, f.attempts, f.error) for f in store.build_failures("ns")
    ]
    assert rows == [
        ("e0", "c", "failed", 1, "c's"),
        ("e1", "b", "failed", 1, "early"),
        ("e3", "b", "failed", 1, "late"),
        ("e4", "b", "dead", 1, "fatal"),
    ]
    assert [f.episode for f in store.build_failures("ns", "b")] == ["e1", "e3", "e4"]
    assert [f.episode for f in store.build_failures("ns", "b", limit=2)] == ["e1", "e3"]
    assert store.build_failures("ns", "zzz") == []
    assert store.build_failures("nowhere") == []


def test_stats_count_done_failed_and_dead_per_builder(store: Store) -> None:
    keys = [e.key for e in add(store, "ns", 5)]
    add(store, "quiet", 1)
    done(store, keys[:2])
    store.mark_failed("ns", "b", [(keys[2], "x")], 3, 60)
    store.mark_failed("ns", "b", [(keys[3], "x")], 1, 60)
    done(store, [keys[0]], builder="c")
    assert store.stats("ns")[0].builds == {
        "b": {"done": 2, "failed": 1, "dead": 1},
        "c": {"done": 1, "failed": 0, "dead": 0},
    }
    assert store.stats("quiet")[0].builds == {}


def test_a_done_mark_after_failures_clears_the_failure(store: Store) -> None:
    keys = [e.key for e in add(store, "ns", 2)]
    fail(store, keys[0])
    fail(store, keys[1], max_attempts=1)
    done(store, keys)
    assert store.build_failures("ns") == []
    assert store.stats("ns")[0].builds == {"b": {"done": 2, "failed": 0, "dead": 0}}
    assert pending(store, now=time.time() + 10**9) == []
    assert store.pending_count("ns", "b") == 0
    assert store.built_keys("ns", "b") == set(keys)
    assert store.retry_failed("ns") == 0


def test_deleting_an_episode_removes_its_marks(store: Store) -> None:
    keys = [e.key for e in add(store, "ns", 3)]
    done(store, [keys[0]])
    fail(store, keys[1])
    assert store.delete_episodes("ns", ["e0", "e1"]) == 2
    assert store.built_keys("ns", "b") == set()
    assert store.build_failures("ns") == []
    assert store.stats("ns")[0].builds == {}
    assert pending(store) == ["e2"] and store.pending_count("ns", "b") == 1
    # the same ids written again are new episodes, with nothing done yet
    store.add_episodes("ns", [prep("e0", "back again")])
    assert pending(store) == ["e2", "e0"]


def test_marks_for_episodes_deleted_meanwhile_are_skipped(store: Store) -> None:
    """A builder may finish a batch after some of its episodes were deleted: the marks of
    the others still land, and nothing fails."""
    keys = [e.key for e in add(store, "ns", 4)]
    assert store.delete_episodes("ns", ["e1", "e2"]) == 2
    store.write_records("ns", [], built=("b", [keys[0], keys[1]]))
    store.mark_failed("ns", "b", [(keys[2], "gone"), (keys[3], "boom")], 3, 0.0)
    assert store.built_keys("ns", "b") == {keys[0]}
    assert [(f.episode, f.error) for f in store.build_failures("ns")] == [("e3", "boom")]


# leases ---------------------------------------------------------------------------------
def test_a_live_lease_is_kept_from_other_owners_and_renewed_by_its_own(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    add(store, "ns", 1)
    add(store, "other", 1)
    a, b = owner("a"), owner("b")
    assert store.lease_holder("ns", "b") is None
    assert store.acquire_lease("ns", "b", a, 60)
    assert store.lease_holder("ns", "b") == a
    assert not store.acquire_lease("ns", "b", b, 60)
    assert store.lease_holder("ns", "b") == a
    # one lease per namespace and builder
    assert store.acquire_lease("ns", "c", b, 60)
    assert store.acquire_lease("other", "b", b, 60)
    assert store.lease_holder("ns", "b") == a

    # renewal extends the lease: a short one renewed long outlives its first ttl
    clock = Clock(monkeypatch)
    assert store.acquire_lease("ns", "b", a, 1)
    assert store.acquire_lease("ns", "b", a, 60)
    clock.advance(30)
    assert store.lease_holder("ns", "b") == a
    assert not store.acquire_lease("ns", "b", b, 60)


def test_an_expired_lease_is_taken_over(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    add(store, "ns", 1)
    a, b = owner("a"), owner("b")
    clock = Clock(monkeypatch)
    assert store.acquire_lease("ns", "b", a, 60)
    clock.advance(59)
    assert store.lease_holder("ns", "b") == a  # still live a second before its end
    clock.advance(2)
    assert store.lease_holder("ns", "b") is None
    assert store.acquire_lease("ns", "b", b, 60)
    assert store.lease_holder("ns", "b") == b
    assert not store.acquire_lease("ns", "b", a, 60)


def test_release_lease_only_releases_the_owners_own_lease(store: Store) -> None:
    add(store, "ns", 1)
    a, b = owner("a"), owner("b")
    assert store.acquire_lease("ns", "b", a, 60)
    store.release_lease("ns", "b", b)
    assert store.lease_holder("ns", "b") == a
    assert not store.acquire_lease("ns", "b", b, 60)
    store.release_lease("ns", "b", a)
    assert store.lease_holder("ns", "b") is None
    assert store.acquire_lease("ns", "b", b, 60)
    store.release_lease("ns", "b", a)  # not a's any more: nothing happens
    assert store.lease_holder("ns", "b") == b
    store.release_lease("nowhere", "b", a)


def test_a_lease_of_a_process_that_has_ended_is_taken_over_at_once(store: Store) -> None:
    add(store, "ns", 1)
    gone = owner("crashed", pid=dead_pid())
    assert store.acquire_lease("ns", "b", gone, HOUR)
    assert store.lease_holder("ns", "b") is None  # not live although far from expiring
    assert store.acquire_lease("ns", "b", owner("b"), 60)
    assert store.lease_holder("ns", "b") == owner("b")


def test_a_lease_of_another_host_or_an_unreadable_owner_counts_as_live(store: Store) -> None:
    add(store, "ns", 1)
    for holder in (owner("x", pid=dead_pid(), host=f"not-{HOST}"), "no-pid-here"):
        assert store.acquire_lease("ns", "b", holder, HOUR)
        assert store.lease_holder("ns", "b") == holder
        assert not store.acquire_lease("ns", "b", owner("b"), 60)
        store.release_lease("ns", "b", holder)


def test_deleting_a_namespace_removes_its_leases(store: Store) -> None:
    add(store, "ns", 1)
    assert store.acquire_lease("ns", "b", owner("a"), HOUR)
    store.delete_namespace("ns")
    assert store.lease_holder("ns", "b") is None
    add(store, "ns", 1)
    assert store.lease_holder("ns", "b") is None
    assert store.acquire_lease("ns", "b", owner("b"), 60)


def test_two_store_objects_share_the_queue_and_the_leases(open_backend) -> None:
    one, two = open_backend(), open_backend()
    keys = [e.key for e in add(one, "ns", 3)]
    a, b = owner("a"), owner("b")
    assert two.lease_holder("ns", "b") is None
    assert one.acquire_lease("ns", "b", a, 60)
    assert two.lease_holder("ns", "b") == a
    assert not two.acquire_lease("ns", "b", b, 60)
    one.release_lease("ns", "b", a)
    assert two.acquire_lease("ns", "b", b, 60)
    assert one.lease_holder("ns", "b") == b
    assert not one.acquire_lease("ns", "b", a, 60)

    done(one, [keys[0]])
    fail(two, keys[1])
    assert pending(two) == ["e2"] and pending(one) == ["e2"]
    assert one.pending_count("ns", "b") == 2
    assert [f.episode for f in one.build_failures("ns")] == ["e1"]


# SQLite only ------------------------------------------------------------------------------
def test_sqlite_deletions_leave_no_marks_or_leases_behind(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    keys = [e.key for e in add(store, "ns", 2)]
    add(store, "kept", 1)
    done(store, [keys[0]])
    fail(store, keys[1])
    store.acquire_lease("ns", "b", owner("a"), HOUR)
    store.acquire_lease("kept", "b", owner("a"), HOUR)
    store.delete_episodes("ns", ["e0"])
    store.delete_namespace("ns")
    store.close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT COUNT(*) FROM build_progress").fetchone() == (0,)
        assert conn.execute("SELECT COUNT(*) FROM build_leases").fetchone() == (1,)
    finally:
        conn.close()
