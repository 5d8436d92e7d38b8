"""Two processes building the same namespace at once do not double any structure, on
SQLite and on PostgreSQL (the build lease is a row of the store, taken under a lock)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest

from memstrata.designs.mnemis.checks import hierarchy_problems
from memstrata.designs.mnemis.graph import Graph
from memstrata.eval.invariants import check_store, expected_lines
from memstrata.memory import Memory

pytestmark = pytest.mark.slow


def _turns() -> list[dict[str, str]]:
    people = ["Ana", "Ben", "Chloe", "Dev"]
    places = ["Lisbon", "Oslo", "Kyoto", "Quito", "Hanoi", "Lima", "Porto", "Cairo"]
    hobbies = ["pottery", "climbing", "chess", "sailing", "baking", "cycling"]
    out = []
    for i in range(240):
        who, where, what = people[i % 4], places[i % 8], hobbies[i % 6]
        text = f"{who} told Maria about {what} classes in {where} with coach {people[(i + 1) % 4]}."
        out.append({"id": f"t{i}", "text": text, "speaker": who, "session": f"s{i // 20}"})
    return out


def test_two_builds_at_once_build_everything_exactly_once(
    store_at: Callable[[str], str], embedder, subprocess_env: dict[str, str]
) -> None:
    db = store_at("m")
    with Memory.open(db, embedder=embedder, **{"build.mode": "manual"}) as m:
        m.add_many(_turns(), namespace="ns")
    env = {**subprocess_env, "MEMSTRATA_BUILD__BATCH_SIZE": "8"}
    cmd = [sys.executable, "-m", "memstrata", "build", "--db", db, "-n", "ns"]
    cmd += ["--recipe", "mnemis", "--json"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    reports = []
    for p in procs:
        stdout, _ = p.communicate(timeout=300)
        assert p.returncode == 0
        reports.append(json.loads(stdout)[0])
    # the loser waited for the winner's lease, then found nothing left to do
    assert sorted(r["episodes"] for r in reports) == [0, 240]
    with Memory.open(db, embedder=embedder) as m:
        graph = Graph.load(m.store, embedder, "ns")
        names = [e.name.casefold() for e in graph.entities.values()]
        facts = [f.fact.casefold() for f in graph.facts.values()]
        stats = m.stats("ns")["namespaces"][0]
        # every episode once, no record doubled, orphaned or dangling, nothing left queued
        findings = check_store(m.store, "ns", expected_lines(_turns()), ["mnemis"])
    assert findings.ok, findings.problems()
    assert len(names) == len(set(names)) and len(facts) == len(set(facts))
    assert hierarchy_problems(graph) == []
    assert stats["builds"]["mnemis"]["done"] == 240

    # the same data built once, alone, gives the same structures
    single = store_at("single")
    with Memory.open(single, embedder=embedder, **{"build.mode": "manual"}) as m:
        m.add_many(_turns(), namespace="ns")
    subprocess.run(cmd[:5] + [single] + cmd[6:], env=env, check=True, capture_output=True)
    with Memory.open(single, embedder=embedder) as m:
        alone = Graph.load(m.store, embedder, "ns")
    assert sorted(names) == sorted(e.name.casefold() for e in alone.entities.values())
    assert sorted(facts) == sorted(f.fact.casefold() for f in alone.facts.values())
