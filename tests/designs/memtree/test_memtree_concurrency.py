"""Insertions into one namespace from several tasks and processes keep the tree whole:
no lost child, no cycle, depths right, every episode a leaf exactly once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata.designs.memtree.tree import Tree, tree_problems
from memstrata.memory import AsyncMemory, Memory

pytestmark = pytest.mark.slow

TOPICS = ["pottery", "sailing", "chess", "baking", "Lisbon", "Kyoto", "jazz", "budget"]

WRITER = """
import sys
from memstrata.memory import Memory
db, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
topics = {topics!r}
with Memory.open(db, recipe="memtree", **{{"build.mode": "inline"}}) as m:
    for i in range(n):
        t = topics[(i * 3 + len(tag)) % len(topics)]
        m.add(f"{{tag}} talked about {{t}} for the {{i}}th time.", id=f"{{tag}}-{{i}}")
"""


def _assert_whole(db: Path, embedder, expected: set[str]) -> Tree:
    with Memory.open(db, embedder=embedder, recipe="memtree", **{"build.mode": "manual"}) as m:
        m.build()  # whatever a writer left queued (its lease was busy) is folded in now
        tree = Tree.load(m.store, embedder, "default")
    assert tree_problems(tree) == []
    leaves = [tree.nodes[n].sources[0].episode for n in tree.leaves()]
    assert len(leaves) == len(set(leaves)) and set(leaves) == expected
    # no cycle: every node reaches the root in at most depth steps
    for nid, node in tree.nodes.items():
        steps, at = 0, node
        while at.parent_id is not None:
            at = tree.nodes[at.parent_id]
            steps += 1
        assert steps == node.depth, nid
    return tree


def test_two_processes_inserting_at_once(
    tmp_path: Path, embedder, subprocess_env: dict[str, str]
) -> None:
    db = tmp_path / "m.db"
    Memory.open(db, embedder=embedder).close()
    script = WRITER.format(topics=TOPICS)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(db), tag, "25"],
            env=subprocess_env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("ana", "bruno")
    ]
    for p in procs:
        _, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
    expected = {f"{tag}-{i}" for tag in ("ana", "bruno") for i in range(25)}
    tree = _assert_whole(db, embedder, expected)
    assert tree.max_depth >= 2


def test_concurrent_tasks_in_one_process(tmp_path: Path, embedder) -> None:
    db = tmp_path / "m.db"

    async def run() -> None:
        memory = await AsyncMemory.open(
            db, embedder=embedder, recipe="memtree", **{"build.mode": "inline"}
        )
        try:
            await asyncio.gather(
                *(
                    memory.add(f"Note {i} about {TOPICS[i % len(TOPICS)]}.", id=f"n{i}")
                    for i in range(30)
                )
            )
        finally:
            await memory.close()

    asyncio.run(run())
    _assert_whole(db, embedder, {f"n{i}" for i in range(30)})
