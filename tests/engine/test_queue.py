"""The build queue with real parts: SQLite files, MiniLM, ``python -m memstrata worker``.

* ``queue`` mode commits episodes at once (searchable by System-1) and leaves them queued
  for the recipe's builders until a worker folds them in, in this process or another;
* a worker killed with SIGKILL at random moments, again and again, loses nothing,
  duplicates nothing and ends with the structures an uninterrupted build makes;
* an LLM that fails every third call: failures are counted, retried after their backoff,
  dead after ``max_attempts`` until ``retry``, and never touch the episodes;
* ``inline`` mode: a builder that raises does not fail ``add``.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from memstrata.config import BuildConfig
from memstrata.designs import system1
from memstrata.designs.mnemis.builder import MnemisBuilder
from memstrata.designs.mnemis.checks import hierarchy_problems
from memstrata.designs.mnemis.graph import Graph
from memstrata.designs.personalai.records import Thesis
from memstrata.embed.base import Embedder
from memstrata.engine import (
    Builder,
    BuilderSpec,
    Context,
    Design,
    Engine,
    Recipe,
    Registry,
    RouteSpec,
    StepResult,
    run_worker,
)
from memstrata.llm import LLMBackendError, LLMClient, LLMError, Message, ScriptedBackend
from memstrata.llm.types import Completion
from memstrata.memory import AsyncMemory, Memory
from memstrata.models import Episode, Span
from memstrata.store import Store, open_store
from waiting import until_async

# synthetic conversations ----------------------------------------------------------------
PEOPLE = (
    "Maya Tomas Priya Jonas Leila Oskar Farah Diego Hana Wiktor Amara Kenji Ingrid Rafael "
    "Sunita Mateo Yusuf Greta Anil Chloe Bruno Nadia Emeka Sofia Lars Imani Pavel Rosa"
).split()
PLACES = (
    "Lisbon Porto Krakow Nairobi Osaka Valencia Tallinn Dublin Quebec Marrakesh Bergen Cusco "
    "Hanoi Reykjavik Tbilisi Seville Montreal Kyoto Edinburgh Zanzibar Ljubljana Trieste"
).split()
THINGS = [
    "pottery class",
    "marathon",
    "jazz festival",
    "climbing gym",
    "photography course",
    "book club",
    "sailing trip",
    "chess tournament",
    "cooking workshop",
    "choir rehearsal",
    "hackathon",
    "farmers market",
    "violin lessons",
    "yoga retreat",
    "robotics meetup",
    "film festival",
    "kayak tour",
    "salsa class",
]
TEMPLATES = [
    "I met {p} in {c} and we signed up for the {t}.",
    "{p} told me the flight to {c} was delayed again.",
    "Next month {p} is moving to {c} for a new job at {q}'s company.",
    "We talked about the {t} with {p} over coffee.",
    "{p} and {q} are planning a weekend in {c}.",
    "Did you hear that {p} won the {t} in {c}?",
    "The rent in {c} went up, so {p} is looking for a flat.",
    "{q} recommended the {t} near {c} to {p}.",
]


def turns(n: int, seed: int, prefix: str) -> list[dict[str, Any]]:
    """``n`` conversation turns with distinct texts naming people, places and activities."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    while len(out) < n:
        p, q = rng.sample(PEOPLE, 2)
        text = rng.choice(TEMPLATES).format(p=p, q=q, c=rng.choice(PLACES), t=rng.choice(THINGS))
        if text in seen:
            continue
        seen.add(text)
        i = len(out)
        out.append(
            {
                "id": f"{prefix}-{i:04d}",
                "text": text,
                "speaker": PEOPLE[i % 3],
                "session": f"{prefix}-s{i // 25}",
                "occurred_at": f"2024-{1 + i // 120:02d}-{1 + i % 28:02d}T10:{i % 60:02d}:00",
            }
        )
    return out


# checks on what was built ---------------------------------------------------------------
def mnemis_counts(stats: dict[str, Any], namespace: str = "default") -> dict[str, int]:
    (row,) = [r for r in stats["namespaces"] if r["namespace"] == namespace]
    counts: dict[str, int] = row["builds"]["mnemis"]
    return counts


def check_mnemis_structures(store: Store, embedder: Embedder, namespace: str) -> Graph:
    """The Mnemis invariants: a valid hierarchy, provenance that names stored episodes,
    facts between stored entities, one entity per case-folded name."""
    graph = Graph.load(store, embedder, namespace)
    assert graph.entities and graph.facts and graph.categories
    assert hierarchy_problems(graph) == []
    stored = {ep.id for ep in store.iter_episodes(namespace, limit=1_000_000)}
    for rec in [*graph.entities.values(), *graph.facts.values()]:
        assert rec.sources, rec
        assert {s.episode for s in rec.sources} <= stored, rec
    for fact in graph.facts.values():
        assert set(fact.entity_ids) | {fact.subject_id, fact.object_id} <= set(graph.entities)
    names = [e.name.casefold() for e in graph.entities.values()]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    return graph


def built_content(graph: Graph) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """What the base graph holds, free of random ids: entity name -> episodes it rests
    on, fact text -> its episodes."""
    entities = {e.name: sorted({s.episode for s in e.sources}) for e in graph.entities.values()}
    facts = {f.fact: sorted({s.episode for s in f.sources}) for f in graph.facts.values()}
    return entities, facts


# 1. queue mode --------------------------------------------------------------------------
def test_queue_mode_commits_at_once_and_the_worker_folds_in_later(
    store_at: Callable[[str], str], embedder: Embedder
) -> None:
    items = turns(24, seed=1, prefix="q")
    ids = [str(it["id"]) for it in items]
    with Memory.open(
        store_at("m"), embedder=embedder, recipe="mnemis", **{"build.mode": "queue"}
    ) as m:
        report = m.add_many(items)
        assert report.added == ids
        # Committed and searchable at once by the builder-free recipe ...
        for it in (items[0], items[13], items[-1]):
            hits = m.search(str(it["text"]), recipe="default", k=3).hits
            assert it["id"] in [h.id for h in hits if h.kind == "episode"]
        # ... but nothing is built yet: all queued for the mnemis builder.
        stats = m.stats()
        assert stats["build_mode"] == "queue"
        assert mnemis_counts(stats) == {"done": 0, "failed": 0, "dead": 0, "queued": 24}
        assert stats["namespaces"][0]["records"] == {}
        before = m.search("Who moved to Lisbon?", recipe="mnemis")
        assert before.pending == 24
        assert {h.kind for h in before.hits} == {"episode"}

        work = m.work(once=True)
        assert (work.episodes, work.failed, work.namespaces) == (24, 0, {"default": 24})
        stats = m.stats()
        assert mnemis_counts(stats) == {"done": 24, "failed": 0, "dead": 0, "queued": 0}
        records = stats["namespaces"][0]["records"]
        assert records["entity"] > 10 and records["fact"] > 10 and records["category"] > 0
        after = m.search("Who moved to Lisbon?", recipe="mnemis")
        assert after.pending == 0
        assert {"entity", "fact"} <= {h.kind for h in after.hits}
        graph = check_mnemis_structures(m.store, embedder, "default")
        assert {"Lisbon", "Maya", "Tomas"} <= {e.name for e in graph.entities.values()}
        # Nothing left: another run folds in nothing and changes nothing.
        stamp = m.store.records_stamp("default")
        assert m.work(once=True).episodes == 0
        assert m.store.records_stamp("default") == stamp


QUICK_QUEUE: dict[str, Any] = {"build.mode": "queue", "build.poll_s": 0.05}


async def _wait_done(mem: AsyncMemory, n: int) -> None:
    async def done() -> bool:
        return mnemis_counts(await mem.stats())["done"] >= n

    await until_async(done, f"{n} episodes folded in")


class Rounds:
    """Counts a worker's rounds as they begin: each lists the store's namespaces first
    (``run_worker``), so once a second has begun the first has run to its end."""

    def __init__(self, store: Store) -> None:
        self.begun, self._changed = 0, threading.Condition()
        namespaces = store.namespaces

        def counting() -> list[str]:
            with self._changed:
                self.begun += 1
                self._changed.notify_all()
            return namespaces()

        store.namespaces = counting  # type: ignore[method-assign]

    async def reach(self, n: int) -> None:
        def wait() -> bool:
            with self._changed:
                return self._changed.wait_for(lambda: self.begun >= n, timeout=60)

        assert await asyncio.to_thread(wait), f"the worker did not begin round {n}"


def test_background_worker_folds_in_later_adds_and_stops_cleanly(
    tmp_path: Path, embedder: Embedder
) -> None:
    async def main() -> None:
        mem = await AsyncMemory.open(
            tmp_path / "m.db",
            embedder=embedder,
            recipe="mnemis",
            **QUICK_QUEUE,
        )
        rounds = Rounds(mem.store)
        task = mem.start_worker()
        assert mem.start_worker() is task  # one background worker at a time
        await rounds.reach(2)  # it has run a round (and idled: the store is empty) before the add
        assert not task.done()
        ep = await mem.add("I met Maya in Lisbon at the conference.", speaker="Tomas")
        await _wait_done(mem, 1)
        await mem.add("My sister adopted a cat called Biscuit in Porto.", id="cat", speaker="Tomas")
        await _wait_done(mem, 2)
        report = await asyncio.wait_for(mem.stop_worker(), 10)
        assert task.done() and report is not None
        assert (report.episodes, report.failed, report.namespaces) == (2, 0, {"default": 2})
        assert await mem.stop_worker() is None  # nothing left to stop

        graph = check_mnemis_structures(mem.store, embedder, "default")
        names = {e.name for e in graph.entities.values()}
        assert {"Lisbon", "Biscuit", "Porto", "Maya", "Tomas"} <= names
        hits = (await mem.search("Biscuit the cat", recipe="mnemis")).hits
        assert any(h.kind == "entity" and h.sources == ["cat"] for h in hits)
        assert ep.id in [h.id for h in hits if h.kind == "episode"]

        # A second background worker, ended by close(): the add is folded in first.
        rounds.begun = 0
        again = mem.start_worker()
        assert again is not task
        await rounds.reach(2)
        await mem.add("My friend Priya is training for the marathon in Osaka.", speaker="Tomas")
        await _wait_done(mem, 3)
        await asyncio.wait_for(mem.close(), 10)
        assert again.done() and not again.cancelled() and again.exception() is None
        assert again.result().episodes == 1

    asyncio.run(main())


def test_a_new_speaker_in_a_later_batch_is_placed_under_speaker(
    tmp_path: Path, embedder: Embedder
) -> None:
    with Memory.open(
        tmp_path / "m.db", embedder=embedder, recipe="mnemis", **{"build.mode": "queue"}
    ) as m:
        m.add("I met Maya in Lisbon at the conference.", speaker="Tomas")
        assert m.work(once=True).episodes == 1  # the first hierarchy is built here
        m.add("My sister adopted a cat called Biscuit in Porto.", speaker="Priya")
        assert m.work(once=True).episodes == 1  # Priya is placed incrementally
        graph = Graph.load(m.store, embedder, "default")
        assert hierarchy_problems(graph) == []


def test_stop_worker_right_after_start_worker(tmp_path: Path, embedder: Embedder) -> None:
    """A stop asked before the background task has run holds: the task ends without
    running a round."""

    async def main() -> None:
        mem = await AsyncMemory.open(tmp_path / "m.db", embedder=embedder, **QUICK_QUEUE)
        task = mem.start_worker()
        # A watchdog stops a runaway worker, so that the failure is an assertion, not a hang.
        asyncio.get_running_loop().call_later(60, mem.request_stop)
        report = await mem.stop_worker()  # awaited directly: it runs before the task does
        assert task.done() and report is not None
        assert (report.rounds, report.episodes, report.stopped) == (0, 0, True)
        await mem.close()

    asyncio.run(main())


# 2. SIGKILL at random moments -----------------------------------------------------------
Snapshot = dict[str, tuple[int, int, int]]  # namespace -> (episodes, done, categories)


def snapshot(store: Store) -> Snapshot:
    out: Snapshot = {}
    for s in store.stats():
        done = s.builds.get("mnemis", {}).get("done", 0)
        out[s.namespace] = (s.episodes, done, s.records.get("category", 0))
    return out


@dataclass
class Kill:
    """When to kill the worker: ``after`` seconds from its start, or once ``namespace``
    has ``fraction`` of what was pending at the start folded in. With ``fraction`` 1.0
    that is the moment the last batch is written: a namespace without categories then
    gets its first hierarchy build (about 30 ms here, which polling every 2 ms catches)."""

    after: float | None = None
    namespace: str = "default"
    fraction: float | None = None

    def due(self, start: Snapshot, now: Snapshot, elapsed: float) -> bool:
        if self.after is not None:
            return elapsed >= self.after
        assert self.fraction is not None
        episodes, done, cats = now.get(self.namespace, (0, 0, 0))
        base = start.get(self.namespace, (0, 0, 0))[1]
        moved = done - base
        if self.fraction >= 1.0:
            return moved > 0 and done == episodes
        return moved >= self.fraction * (episodes - base)


def phase(start: Snapshot, now: Snapshot) -> str:
    """Where the worker was when it died, judged from what it had committed."""
    if all(now[ns][1] == start.get(ns, (0, 0, 0))[1] for ns in now):
        pending = any(e > d for e, d, _ in now.values())
        return "before the first batch" if pending else "idle"
    if any(e > d for e, d, _ in now.values()):
        return "between batches"
    if any(c == 0 for _, _, c in now.values()):
        return "hierarchy build"
    return "after the last batch"


def worker_cmd(db: str) -> list[str]:
    return [sys.executable, "-m", "memstrata", "worker", "--db", db, "--recipe", "mnemis"]


@pytest.mark.slow
def test_worker_killed_at_random_moments_loses_and_duplicates_nothing(
    tmp_path: Path,
    store_at: Callable[[str], str],
    embedder: Embedder,
    subprocess_env: dict[str, str],
) -> None:
    """Ten SIGKILLs of a worker process, on SQLite and on PostgreSQL."""
    db = store_at("m")
    env = {**subprocess_env, "MEMSTRATA_BUILD__MODE": "queue", "MEMSTRATA_BUILD__BATCH_SIZE": "4"}
    rng = random.Random(20240611)
    # Chunk sizes are multiples of the batch size: the batches of the killed runs are then
    # the batches of an uninterrupted build, whose result must be the same.
    first = ("default", turns(400, seed=1, prefix="a"))
    later: dict[int, tuple[str, list[dict[str, Any]]]] = {
        3: ("default", turns(40, seed=2, prefix="b")),
        4: ("default", turns(40, seed=3, prefix="c")),
        5: ("team", turns(60, seed=4, prefix="d")),  # a second first hierarchy build
        6: ("team", turns(40, seed=5, prefix="e")),
        7: ("default", turns(40, seed=6, prefix="f")),
        8: ("team", turns(40, seed=7, prefix="g")),
        9: ("default", turns(40, seed=8, prefix="h")),
    }
    plan = [
        Kill(after=rng.uniform(0.05, 0.4)),  # still starting: before the first batch
        Kill(fraction=rng.uniform(0.1, 0.5)),  # in the middle of the drain
        Kill(fraction=1.0),  # every batch written, the first hierarchy build running
        Kill(after=rng.uniform(0.8, 1.8)),
        Kill(fraction=rng.uniform(0.2, 0.8)),  # incremental placement into the hierarchy
        Kill(namespace="team", fraction=1.0),
        Kill(after=rng.uniform(0.05, 2.0)),
        Kill(fraction=rng.uniform(0.2, 0.8)),
        Kill(after=rng.uniform(0.05, 2.0)),
        Kill(after=rng.uniform(0.05, 2.0)),
    ]
    added: dict[str, list[dict[str, Any]]] = {"default": [], "team": []}
    phases: list[str] = []
    with Memory.open(db, embedder=embedder, recipe="mnemis", **{"build.mode": "queue"}) as m:
        m.add_many(first[1], namespace=first[0])
        added[first[0]] += first[1]
        for round_no, kill in enumerate(plan):
            if round_no in later:
                ns, items = later[round_no]
                assert m.add_many(items, namespace=ns).added == [it["id"] for it in items]
                added[ns] += items
            start = snapshot(m.store)
            log_path = tmp_path / f"worker{round_no}.log"
            with log_path.open("w") as log:
                proc = subprocess.Popen(worker_cmd(db), env=env, stdout=log, stderr=log)
                try:
                    t0 = time.monotonic()
                    now = start
                    while not kill.due(start, now, time.monotonic() - t0):
                        assert proc.poll() is None, log_path.read_text()
                        assert time.monotonic() - t0 < 300, f"round {round_no}: {kill} never came"
                        # Slow polling while the worker starts (it needs the CPU), fast once
                        # it writes, so that the short hierarchy build is not missed.
                        time.sleep(0.002 if now != start else 0.02)
                        now = snapshot(m.store)
                finally:
                    os.kill(proc.pid, signal.SIGKILL)
                    returncode = proc.wait(timeout=10)
            assert returncode == -signal.SIGKILL, log_path.read_text()
            phases.append(phase(start, snapshot(m.store)))

    # The phases the kills landed in (printed with -s; each must have been hit at least once).
    print("kill phases:", phases)
    assert {"before the first batch", "between batches", "hierarchy build"} <= set(phases)

    done = subprocess.run(
        [*worker_cmd(db), "--once"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert " 0 failed" in done.stdout

    with Memory.open(db, embedder=embedder, recipe="mnemis", **{"build.mode": "queue"}) as m:
        stats = m.stats()
        assert sorted(m.namespaces()) == ["default", "team"]
        built: dict[str, Any] = {}
        for ns, items in added.items():
            ids = [str(it["id"]) for it in items]
            # every episode is stored, once, and searchable
            assert [e.id for e in m.get(ids, namespace=ns)] == ids
            (row,) = [r for r in stats["namespaces"] if r["namespace"] == ns]
            assert row["episodes"] == len(ids) and row["failures"] == []
            assert row["embedded"] == len(ids)  # every one in the dense index too
            sample = items[::9] + [items[-1]]
            texts = [str(it["text"]) for it in sample]
            found = m.search_many(texts, namespace=ns, k=5, recipe="rag")
            for it, res in zip(sample, found, strict=True):
                assert it["id"] in [h.id for h in res.hits], it
            assert mnemis_counts(stats, ns) == {
                "done": len(ids),
                "failed": 0,
                "dead": 0,
                "queued": 0,
            }
            built[ns] = built_content(check_mnemis_structures(m.store, embedder, ns))
        stamps = {ns: m.store.records_stamp(ns) for ns in added}
        # the killed workers' leases are gone (dead processes of this host hold none)
        assert all(m.store.lease_holder(ns, "mnemis") is None for ns in added)

    # A further run folds in nothing and writes nothing.
    again = subprocess.run(
        [*worker_cmd(db), "--once"], env=env, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr + again.stdout
    assert "worker: 0 episodes folded in, 0 failed" in again.stdout
    store = open_store(db)
    try:
        assert {ns: store.records_stamp(ns) for ns in added} == stamps
        assert [s.records for s in store.stats()] == [r["records"] for r in stats["namespaces"]]
    finally:
        store.close()

    # Built again from scratch, without interruption, the episodes make the same entities
    # and facts (a valid hierarchy too, though not the same: it grew incrementally above).
    with Memory.open(db, embedder=embedder, recipe="mnemis", **{"build.batch_size": 4}) as m:
        for ns in added:
            (rep,) = m.build(ns, rebuild=True)
            assert (rep.episodes, rep.failed, rep.details["hierarchy"]) == (
                len(added[ns]),
                0,
                "built",
            )
            graph = check_mnemis_structures(m.store, embedder, ns)
            assert built_content(graph) == built[ns]


# 3. failures with a scripted LLM ---------------------------------------------------------
class Echo(BaseModel):
    text: str


class EchoBuilder(Builder):
    """One LLM call per episode; writes one thesis holding the reply, or reports the
    episode failed."""

    name = "echo"
    kinds = ("thesis",)

    async def update(self, ctx: Context, namespace: str, episodes: Sequence[Episode]) -> StepResult:
        assert ctx.llm is not None
        failed: dict[str, str] = {}
        put: list[Thesis] = []
        keys: list[int] = []
        for ep in episodes:
            try:
                reply = await ctx.llm.structured(
                    [Message(role="user", content=ep.text)], Echo, stage="echo.update"
                )
            except LLMError as exc:
                failed[ep.id] = str(exc)
                continue
            span = Span(episode=ep.id, start=0, end=len(ep.text))
            put.append(Thesis(namespace=namespace, text=reply.text, sources=[span]))
            keys.append(ep.key)
        await asyncio.to_thread(ctx.store.write_records, namespace, put, built=(self.name, keys))
        return StepResult(failed=failed)


ECHO_DESIGN = Design(
    name="echo",
    builders=[EchoBuilder],
    recipes=[
        Recipe(
            name="echo",
            builders=[BuilderSpec(name="echo")],
            routes=[RouteSpec(name="records", params={"kind": "thesis"})],
        )
    ],
)


def shout(messages: list[Message]) -> str:
    return Echo(text=messages[-1].content.upper()).model_dump_json()


class FlakyBackend:
    """A scripted backend of which every third call fails (non-retryable) while ``flaky``."""

    def __init__(self, calls: int = 500) -> None:
        self.inner = ScriptedBackend([shout] * calls)
        self.name = self.inner.name
        self.model = self.inner.model
        self.calls = 0
        self.prompts: list[str] = []  # every call's last message, failed ones included
        self.flaky = True

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
    ) -> Completion:
        self.calls += 1
        self.prompts.append(messages[-1].content)
        if self.flaky and self.calls % 3 == 0:
            raise LLMBackendError("scripted outage", status=400, retryable=False)
        return await self.inner.complete(
            messages, json_schema=json_schema, max_tokens=max_tokens, temperature=temperature
        )


async def echo_setup(
    tmp_path: Path, embedder: Embedder, n: int, **build: Any
) -> tuple[AsyncMemory, Engine, FlakyBackend, list[str]]:
    """A store with ``n`` episodes (manual mode) and an engine that knows the echo design."""
    manual: dict[str, Any] = {"build.mode": "manual"}
    mem = await AsyncMemory.open(tmp_path / "m.db", embedder=embedder, **manual)
    items = [
        {"id": f"e{i:02d}", "text": f"note number {i} about {PLACES[i % len(PLACES)]}"}
        for i in range(n)
    ]
    await mem.add_many(items)
    backend = FlakyBackend()
    client = LLMClient(backend, usage=mem.store, max_retries=0)
    engine = Engine(
        mem.store,
        embedder,
        Registry([system1.design, ECHO_DESIGN]),
        llm=lambda: client,
        build=BuildConfig(batch_size=4, **build),
    )
    return mem, engine, backend, [str(it["id"]) for it in items]


def echo_counts(engine: Engine) -> dict[str, int]:
    counts: dict[str, int] = engine.stats("default", "echo")["namespaces"][0]["builds"]["echo"]
    return counts


def theses(store: Store) -> dict[str, str]:
    """Episode id -> the thesis text built from it; fails on a second thesis of one episode."""
    out: dict[str, str] = {}
    for rec in store.get_records("default", "thesis", builder=None):
        assert isinstance(rec, Thesis)
        (span,) = rec.sources
        assert span.episode not in out, f"two theses of {span.episode}"
        out[span.episode] = rec.text
    return out


def test_llm_failures_retry_after_backoff_turn_dead_and_come_back(
    tmp_path: Path, embedder: Embedder
) -> None:
    async def main() -> None:
        mem, engine, backend, ids = await echo_setup(
            tmp_path, embedder, 24, max_attempts=2, backoff_s=0
        )
        texts = {ep.id: ep.text for ep in await mem.get(ids)}

        # Drain 1: calls 3, 6, ..., 24 fail, i.e. episodes e02, e05, ..., e23.
        (rep,) = await engine.build("default", "echo")
        first = [ids[i] for i in range(2, 24, 3)]
        assert (rep.tier, rep.episodes, rep.failed) == ("llm", 24, 8)
        assert backend.calls == 24
        assert echo_counts(engine) == {"done": 16, "failed": 8, "dead": 0, "queued": 0}
        failures = mem.store.build_failures("default", "echo")
        assert [f.episode for f in failures] == first
        assert {(f.status, f.attempts) for f in failures} == {("failed", 1)}
        assert all("scripted outage" in f.error for f in failures)
        usage = (await mem.stats())["llm"]["echo.update"]
        assert (usage["calls"], usage["failures"]) == (24, 8)
        assert sorted(theses(mem.store)) == sorted(set(ids) - set(first))
        assert [e.id for e in await mem.get(ids)] == ids  # the episodes are all there
        assert await engine.pending("default", "echo") == 8

        # Drain 2 (backoff 0): only the 8 failed ones are tried again; calls 27 and 30
        # fail, the third and sixth of them (e08, e17), now at max_attempts: dead.
        (rep,) = await engine.build("default", "echo")
        assert (rep.episodes, rep.failed) == (8, 2)
        assert backend.prompts[24:] == [texts[i] for i in first]
        dead = [first[2], first[5]]
        assert dead == ["e08", "e17"]
        assert echo_counts(engine) == {"done": 22, "failed": 0, "dead": 2, "queued": 0}
        failures = mem.store.build_failures("default", "echo")
        assert [(f.episode, f.status, f.attempts) for f in failures] == [
            (i, "dead", 2) for i in dead
        ]
        assert mem.store.pending_episodes("default", "echo", now=time.time() + 1e6) == []

        # Dead ones stay out of the queue: neither a drain nor a worker touches them.
        (rep,) = await engine.build("default", "echo")
        assert (rep.episodes, rep.failed) == (0, 0)
        assert (await run_worker(engine, "echo", once=True)).episodes == 0
        assert backend.calls == 32
        assert await engine.pending("default", "echo") == 2  # still not built
        stats = await mem.stats()
        (row,) = stats["namespaces"]
        assert row["builds"]["echo"] == {"done": 22, "failed": 0, "dead": 2, "queued": 0}
        assert [f["episode"] for f in row["failures"]] == dead

        # retry brings them back; with a working LLM a worker completes them all.
        assert await mem.retry(builder="echo") == 2
        assert echo_counts(engine)["failed"] == 2
        backend.flaky = False
        report = await run_worker(engine, "echo", once=True)
        assert (report.episodes, report.failed) == (2, 0)
        assert backend.prompts[32:] == [texts[i] for i in dead]
        assert echo_counts(engine) == {"done": 24, "failed": 0, "dead": 0, "queued": 0}
        assert mem.store.build_failures("default") == []
        assert await engine.pending("default", "echo") == 0
        assert theses(mem.store) == {i: texts[i].upper() for i in ids}
        hits = (await engine.search("default", [texts["e08"]], 3, "echo"))[0]
        assert hits[0].kind == "thesis" and hits[0].sources == ["e08"]
        await mem.close()

    asyncio.run(main())


def test_failed_episodes_wait_for_their_backoff(tmp_path: Path, embedder: Embedder) -> None:
    async def main() -> None:
        mem, engine, backend, ids = await echo_setup(
            tmp_path, embedder, 6, max_attempts=3, backoff_s=30
        )
        t0 = time.time()
        (rep,) = await engine.build("default", "echo")
        t1 = time.time()
        assert (rep.episodes, rep.failed) == (6, 2)
        failures = mem.store.build_failures("default", "echo")
        assert [(f.episode, f.status) for f in failures] == [("e02", "failed"), ("e05", "failed")]
        assert all(f.retry_at is not None and t0 + 30 <= f.retry_at <= t1 + 30 for f in failures)
        # Not yet due: a drain and a worker leave them alone ...
        (rep,) = await engine.build("default", "echo")
        assert rep.episodes == 0
        assert (await run_worker(engine, "echo", once=True)).episodes == 0
        assert backend.calls == 6
        # ... until their retry time has come.
        assert mem.store.pending_episodes("default", "echo", now=t0 + 29) == []
        due = mem.store.pending_episodes("default", "echo", now=t1 + 31)
        assert [e.id for e in due] == ["e02", "e05"]
        # retry makes them due now, whatever their backoff.
        assert await mem.retry() == 2
        backend.flaky = False
        assert (await run_worker(engine, "echo", once=True)).episodes == 2
        assert echo_counts(engine) == {"done": 6, "failed": 0, "dead": 0, "queued": 0}
        assert sorted(theses(mem.store)) == ids
        await mem.close()

    asyncio.run(main())


# 4. inline mode ---------------------------------------------------------------------------
def test_inline_builder_failure_does_not_fail_add(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(self: MnemisBuilder, *args: Any) -> StepResult:
        raise RuntimeError("the builder broke")

    with Memory.open(
        tmp_path / "m.db", embedder=embedder, recipe="mnemis", **{"build.mode": "inline"}
    ) as m:
        m.add("I met Maya in Lisbon at the conference.", id="ok", speaker="Tomas")
        assert mnemis_counts(m.stats())["done"] == 1
        with monkeypatch.context() as patch:
            patch.setattr(MnemisBuilder, "update", broken)
            ep = m.add(
                "My sister adopted a cat called Biscuit in Porto.", id="bad", speaker="Tomas"
            )
            report = m.add_many(
                [{"id": "bad2", "text": "My friend Priya ran in Osaka.", "speaker": "Tomas"}]
            )
        assert ep.id == "bad" and report.added == ["bad2"]
        # Stored, searchable, and the failure recorded for a retry.
        assert [e.id for e in m.get(["ok", "bad", "bad2"])] == ["ok", "bad", "bad2"]
        hits = m.search("a cat called Biscuit", recipe="default", k=1).hits
        assert hits[0].id == "bad"
        stats = m.stats()
        assert mnemis_counts(stats) == {"done": 1, "failed": 2, "dead": 0, "queued": 0}
        failures = stats["namespaces"][0]["failures"]
        assert [(f["episode"], f["status"]) for f in failures] == [
            ("bad", "failed"),
            ("bad2", "failed"),
        ]
        assert all("RuntimeError: the builder broke" in f["error"] for f in failures)
        assert m.search("Biscuit", recipe="mnemis").pending == 2
        # Fixed: retry and build fold them in.
        assert m.retry() == 2
        (rep,) = m.build()
        assert (rep.episodes, rep.failed) == (2, 0)
        assert mnemis_counts(m.stats()) == {"done": 3, "failed": 0, "dead": 0, "queued": 0}
        graph = check_mnemis_structures(m.store, embedder, "default")
        assert {"Biscuit", "Osaka"} <= {e.name for e in graph.entities.values()}
