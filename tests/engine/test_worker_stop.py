"""Stopping a build between two batches: SIGTERM and Ctrl-C on ``memstrata worker``, the
background worker's ``stop_worker`` and a build's ``stop`` event.

A user's worker over a long backlog went on to the end of its round after SIGTERM. The
stop must land between two batches of the same drain: at most one batch (the one being
written) is folded in after it, the rest stays queued and is reported, and what was
written is whole (a batch's records and done marks are one transaction). MemTree makes
the last point exact: every episode folded in is one leaf, so the leaves' episodes must
be the done marks.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_queue import turns

from memstrata.embed.base import Embedder
from memstrata.memory import AsyncMemory, Memory
from memstrata.store import SQLiteStore, Store
from waiting import until, until_async

BATCH = 4
RECIPE = "memtree"


def done_ids(store: Store, namespace: str = "default") -> set[str]:
    """External ids of the episodes the MemTree builder has marked done."""
    keys = store.built_keys(namespace, RECIPE)
    return {ep.id for ep in store.episodes_by_key(sorted(keys)).values()}


async def agreement(mem: AsyncMemory, namespace: str = "default") -> tuple[set[str], list[str]]:
    """The done marks, checked against the tree: every done episode has a leaf and every
    leaf's episode is done; plus the design's own invariant check."""
    from memstrata.designs.memtree.builder import tree_cache

    (builder,) = mem.engine.builders(RECIPE)
    ctx = mem.engine.context(namespace, "heuristic")
    tree = await asyncio.to_thread(tree_cache(ctx).get, namespace)
    leaves = {s.episode for nid in tree.leaves() for s in tree.nodes[nid].sources}
    done = await asyncio.to_thread(done_ids, mem.store, namespace)
    assert leaves == done, (sorted(leaves - done), sorted(done - leaves))
    return done, await builder.check(ctx, namespace)


def exited(proc: subprocess.Popen[bytes], err_path: Path) -> bool:
    """False while ``proc`` runs; a failure with its stderr once it has ended."""
    assert proc.poll() is None, err_path.read_text()
    return False


def queued_store(path: Path, embedder: Embedder, n: int) -> list[str]:
    """A store with ``n`` episodes committed and all of them queued for MemTree."""
    items = turns(n, seed=11, prefix="w")
    with Memory.open(path, embedder=embedder, recipe=RECIPE, **{"build.mode": "queue"}) as m:
        assert m.add_many(items).added == [it["id"] for it in items]
    return [str(it["id"]) for it in items]


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_worker_stops_within_one_batch_of_a_signal_and_says_what_is_left(
    tmp_path: Path, embedder: Embedder, subprocess_env: dict[str, str], signum: int
) -> None:
    db = tmp_path / "m.db"
    n = 240
    queued_store(db, embedder, n)
    env = {
        **subprocess_env,
        "MEMSTRATA_BUILD__MODE": "queue",
        "MEMSTRATA_BUILD__BATCH_SIZE": str(BATCH),
    }
    cmd = [sys.executable, "-m", "memstrata", "worker", "--db", str(db), "--recipe", RECIPE]
    out_path, err_path = tmp_path / "out.txt", tmp_path / "err.txt"
    store = SQLiteStore(db)
    try:
        with out_path.open("w") as out, err_path.open("w") as err:
            proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
            try:
                until(
                    lambda: len(done_ids(store)) >= 2 * BATCH or exited(proc, err_path),
                    "the worker folded two batches in",
                )
                proc.send_signal(signum)
                # Read after the signal: whatever was committed before it is counted, so
                # only the batch being written when it came may be added.
                at_signal = len(done_ids(store))
                status = proc.wait(timeout=120)
            finally:
                if proc.poll() is None:
                    proc.kill()
        final = done_ids(store)
        assert store.lease_holder("default", RECIPE) is None
    finally:
        store.close()

    stdout, stderr = out_path.read_text(), err_path.read_text()
    assert status == 130, stderr
    assert "Traceback" not in stderr, stderr
    assert at_signal <= len(final) <= at_signal + BATCH, (at_signal, len(final))
    assert len(final) < n
    left = n - len(final)
    name = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
    assert f"worker: {_episodes(len(final))} folded in, 0 failed, 1 round" in stdout
    assert f"{name}: stopping after the current batch" in stderr
    assert (
        f"interrupted: stopped by {name} after the current batch; the "
        f"{_episodes(len(final))} folded in {'is' if len(final) == 1 else 'are'} committed"
    ) in stderr
    assert f"still queued in default: {_episodes(left)} for memtree" in stderr
    assert f"run the worker again to continue: memstrata worker --db {db} --recipe memtree" in (
        stderr
    )

    async def check_and_resume() -> None:
        async with AsyncMemory.open(
            db, embedder=embedder, recipe=RECIPE, **{"build.batch_size": BATCH}
        ) as mem:
            done, problems = await agreement(mem)
            assert done == final and problems == []
            stats = await mem.stats()
            assert stats["namespaces"][0]["builds"][RECIPE]["queued"] == left

    asyncio.run(check_and_resume())

    # Running the worker again folds in exactly what was left.
    again = subprocess.run([*cmd, "--once"], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"worker: {_episodes(left)} folded in, 0 failed" in again.stdout

    async def check_all() -> None:
        async with AsyncMemory.open(db, embedder=embedder, recipe=RECIPE) as mem:
            done, problems = await agreement(mem)
            assert len(done) == n and problems == []

    asyncio.run(check_all())


def test_stop_worker_stops_the_background_worker_within_one_batch(
    tmp_path: Path, embedder: Embedder
) -> None:
    n = 120
    ids = queued_store(tmp_path / "m.db", embedder, n)

    async def main() -> None:
        async with AsyncMemory.open(
            tmp_path / "m.db",
            embedder=embedder,
            recipe=RECIPE,
            **{"build.mode": "queue", "build.batch_size": BATCH, "build.poll_s": 0.05},
        ) as mem:
            store = mem.store
            task = mem.start_worker()

            async def two_batches() -> bool:
                assert not task.done()
                return len(await asyncio.to_thread(done_ids, store)) >= 2 * BATCH

            await until_async(two_batches, "the worker folded two batches in")
            mem.request_stop()
            at_stop = len(await asyncio.to_thread(done_ids, store))
            report = await asyncio.wait_for(mem.stop_worker(), 60)
            assert report is not None and report.stopped
            done, problems = await agreement(mem)
            assert problems == []
            assert at_stop <= len(done) <= at_stop + BATCH < n
            assert report.episodes == len(done) and report.failed == 0
            assert report.queued == {"default": {RECIPE: n - len(done)}}
            assert done == set(ids[: len(done)])  # in insertion order, none skipped

            # What the stop left is folded in by the next run, and nothing twice.
            rest = await mem.work(once=True)
            assert (rest.episodes, rest.stopped, rest.queued) == (n - len(done), False, {})
            done, problems = await agreement(mem)
            assert done == set(ids) and problems == []

    asyncio.run(main())


def test_a_build_stops_between_two_batches_of_one_drain(tmp_path: Path, embedder: Embedder) -> None:
    n = 40
    ids = queued_store(tmp_path / "m.db", embedder, n)

    async def main() -> None:
        async with AsyncMemory.open(
            tmp_path / "m.db",
            embedder=embedder,
            recipe=RECIPE,
            **{"build.mode": "manual", "build.batch_size": BATCH},
        ) as mem:
            stop = asyncio.Event()
            seen = 0

            def progress(k: int) -> None:  # called after each batch is written
                nonlocal seen
                seen += k
                if seen >= 3 * BATCH:
                    stop.set()

            (report,) = await mem.build(progress=progress, stop=stop)
            assert (report.episodes, report.stopped) == (3 * BATCH, True)
            done, problems = await agreement(mem)
            assert done == set(ids[: 3 * BATCH]) and problems == []
            assert (await mem.search("Lisbon", recipe=RECIPE)).pending == n - 3 * BATCH

            (report,) = await mem.build()
            assert (report.episodes, report.stopped) == (n - 3 * BATCH, False)
            done, problems = await agreement(mem)
            assert done == set(ids) and problems == []

    asyncio.run(main())


class SilentServer:
    """A TCP server that accepts connections and never answers: an LLM call to it hangs,
    so the worker's first batch cannot end by itself."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self.held.append(self.sock.accept()[0])

    def close(self) -> None:
        for conn in [*self.held, self.sock]:
            conn.close()


@pytest.mark.slow
def test_a_second_ctrl_c_stops_the_worker_at_once(
    tmp_path: Path, embedder: Embedder, subprocess_env: dict[str, str]
) -> None:
    db = tmp_path / "m.db"
    queued_store(db, embedder, 12)
    server = SilentServer()
    env = {
        **subprocess_env,
        "MEMSTRATA_BUILD__MODE": "queue",
        "MEMSTRATA_BUILD__BATCH_SIZE": str(BATCH),
        "MEMSTRATA_LLM__KIND": "openai",
        "MEMSTRATA_LLM__BASE_URL": f"http://127.0.0.1:{server.port}/v1",
        "MEMSTRATA_LLM__MODEL": "m",
        "MEMSTRATA_LLM__TIMEOUT_S": "3600",
    }
    cmd = [sys.executable, "-m", "memstrata", "worker", "--db", str(db), "--recipe", RECIPE]
    out_path, err_path = tmp_path / "out.txt", tmp_path / "err.txt"
    try:
        with out_path.open("w") as out, err_path.open("w") as err:
            proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
            try:
                # the first batch waits for the LLM
                until(lambda: server.held or exited(proc, err_path), "the worker called the LLM")
                proc.send_signal(signal.SIGINT)
                until(
                    lambda: (
                        "stopping after the current batch" in err_path.read_text()
                        or exited(proc, err_path)
                    ),
                    lambda: f"the worker said it stops after the batch: {err_path.read_text()}",
                )
                proc.send_signal(signal.SIGINT)  # the batch would never end: stop now
                status = proc.wait(timeout=120)
            finally:
                if proc.poll() is None:
                    proc.kill()
    finally:
        server.close()
    stdout, stderr = out_path.read_text(), err_path.read_text()
    assert status == 130, stderr
    assert "Traceback" not in stderr, stderr
    assert stdout == ""
    assert (
        "interrupted: stopped by Ctrl-C before anything was committed; run the worker "
        "again to continue" in stderr
    )
    store = SQLiteStore(db)
    try:
        assert done_ids(store) == set()  # the cut batch left no trace ...
        assert store.lease_holder("default", RECIPE) is None  # ... nor its lease
        assert store.stats("default")[0].records == {}
    finally:
        store.close()


def _episodes(n: int) -> str:
    """A count as the command line words it: "1 episode", "2 episodes"."""
    return f"{n} episode" + ("" if n == 1 else "s")
