"""The engine's side of repairs: the log survives a crash between the delete and the
re-derivation, a busy lease defers the repair to its holder, an LLM that fails during a
repair hands it to the heuristic tier, and records written before ownership are adopted.

Real stores (SQLite and PostgreSQL; the last test is SQLite's own) and the real MiniLM;
MemTree is the design under test (its aggregates quote every leaf beneath them), and any
design would do.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Config
from memstrata.llm import LLMClient, ScriptedBackend
from memstrata.memory import Memory
from memstrata.store import Store
from waiting import Clock

NS = "n"
TURNS = [
    {"id": f"t{i}", "speaker": "Ana", "session": "s1", "text": text}
    for i, text in enumerate(
        [
            "We booked the cabin by the lake for the first week of June.",
            "The cabin by the lake has a canoe and a wood stove.",
            "My cousin Zebulon will bring his ferret Quillfeather to the lake cabin.",
            "We will paddle the canoe across the lake every morning in June.",
            "The lake cabin needs firewood for the stove, we should buy some.",
        ]
    )
]
DEEP = {"builders": [{"name": "memtree", "params": {"theta0": 0.0, "rate": 0.0}}]}


def opened(path: str | Path, embedder: Any, **kw: Any) -> Memory:
    recipe = {"routes": [{"name": "memtree"}], **DEEP, "fusion": {"order": "mixed"}}
    return Memory.open(
        path, embedder=embedder, namespace=NS, recipe="deep", recipes={"deep": recipe}, **kw
    )


def quoting(m: Memory, word: str) -> list[str]:
    nodes = m.store.get_records(NS, "tree_node", builder="memtree")
    return [n.id for n in nodes if word in n.content]


def test_a_repair_cut_short_by_a_crash_runs_before_the_next_build(
    store_at: Callable[[str], str], embedder
) -> None:
    with opened(store_at("m"), embedder) as m:
        m.add_many(TURNS)
        assert quoting(m, "Quillfeather")
        # the delete's transaction commits, then the process dies before the repair
        m.store.delete_episodes(NS, ["t2"])
        assert m.stats(NS)["namespaces"][0]["repairs"]["memtree"] >= 1
        assert quoting(m, "Quillfeather")  # the stale aggregate is still there
    with opened(store_at("m"), embedder) as m:
        (report,) = m.build()
        assert report.episodes == 0 and report.errors == []
        assert quoting(m, "Quillfeather") == []
        assert m.stats(NS)["namespaces"][0]["repairs"] == {}


def test_a_busy_lease_defers_the_repair_to_its_holder(
    store_at: Callable[[str], str], embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(monkeypatch)
    with opened(store_at("m"), embedder, **{"build.repair_wait_s": 0.2}) as m:
        m.engine.clock, m.engine.sleep = clock.monotonic, clock.sleep
        m.add_many(TURNS)
        other = "elsewhere:1:abc"  # a process on another host, still alive
        assert m.store.acquire_lease(NS, "memtree", other, 60)
        assert m.delete(["t2"]) == 1  # returns: it does not wait for the build to end
        assert 0.2 <= sum(clock.slept) < 0.3  # after build.repair_wait_s, on the test clock
        assert m.stats(NS)["namespaces"][0]["repairs"]["memtree"] >= 1
        m.store.release_lease(NS, "memtree", other)
        m.build()  # the holder's next drain (here ours) repairs first
        assert quoting(m, "Quillfeather") == []
        assert m.stats(NS)["namespaces"][0]["repairs"] == {}


def test_an_llm_failing_during_a_repair_leaves_it_to_the_heuristic_tier(
    store_at: Callable[[str], str], embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = ScriptedBackend([RuntimeError("the model is down")] * 50)

    def scripted(config: Config, store: Store, namespace: str | None = None) -> LLMClient:
        return LLMClient(backend, max_retries=0)

    with opened(store_at("m"), embedder) as m:
        m.add_many(TURNS)  # no LLM yet: built inline on the heuristic tier
        # three leaves under the first one's parent: a repair has children to aggregate
        assert quoting(m, "Quillfeather")
    monkeypatch.setattr("memstrata.memory.make_llm", scripted)
    with opened(store_at("m"), embedder) as m:
        assert m.delete(["t2"]) == 1
        assert backend.requests  # the llm tier was tried first
        assert quoting(m, "Quillfeather") == []
        assert m.stats(NS)["namespaces"][0]["repairs"] == {}


def test_records_written_before_ownership_are_adopted_on_open(tmp_path: Path, embedder) -> None:
    path = tmp_path / "old.db"
    with Memory.open(path, embedder=embedder, namespace=NS, **{"build.mode": "manual"}) as m:
        m.add_many(TURNS)
        for recipe in ("memtree", "mnemis", "personalai"):
            m.build(recipe=recipe)
        before = {b: sum(k.values()) for b, k in _owned(m).items()}
    conn = sqlite3.connect(path)
    conn.execute("UPDATE records SET builder=''")  # as schema version 3 wrote them
    conn.commit()
    conn.close()

    with Memory.open(path, embedder=embedder, namespace=NS, **{"build.mode": "manual"}) as m:
        owned = _owned(m)
        # only MemTree writes tree nodes: its records are given back to it as they were
        assert sum(owned["memtree"].values()) == before["memtree"]
        # Mnemis and PersonalAI both write entities and facts: they start over
        assert "mnemis" not in owned and "personalai" not in owned and "" not in owned
        builds = m.stats(NS)["namespaces"][0]["builds"]
        assert builds["memtree"]["done"] == len(TURNS)
        assert builds.get("mnemis", {"done": 0})["done"] == 0
        for recipe in ("mnemis", "personalai"):
            (report,) = m.build(recipe=recipe)
            assert report.episodes == len(TURNS)
        assert {b: sum(k.values()) for b, k in _owned(m).items()} == before


def _owned(m: Memory) -> dict[str, dict[str, int]]:
    stats: dict[str, dict[str, int]] = m.stats(NS)["namespaces"][0]["records_by_builder"]
    return stats
