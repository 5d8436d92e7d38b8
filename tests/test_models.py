"""Record kinds: the core's two, the designs' declared to the engine, read back by any
process without importing a design first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from memstrata.engine import Design
from memstrata.engine.registry import Registry, _builtin_designs
from memstrata.errors import ConfigError
from memstrata.models import Derived

WRITE = """
import sys
from memstrata import Memory
from memstrata.designs.memtree.records import TreeNode
from memstrata.models import Span
with Memory.open(sys.argv[1], recipe="rag") as memory:
    memory.add("Ana moved.", id="e", namespace="ns")
    node = TreeNode(namespace="ns", content="Ana moved.", depth=1,
                    sources=[Span(episode="e", start=0, end=10)])
    memory.store.put_records("ns", [node], owner="memtree")
"""

READ = """
import sys
from memstrata.store import open_store
store = open_store(sys.argv[1])
(node,) = store.get_records("ns", "tree_node", builder="memtree")
print(type(node).__module__, type(node).__name__, node.content)
store.close()
"""


def test_a_process_reads_a_design_kind_without_importing_the_design(tmp_path: Path) -> None:
    db = str(tmp_path / "k.db")
    for code in (WRITE, READ):
        done = subprocess.run(
            [sys.executable, "-c", code, db], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["memstrata.designs.memtree.records", "TreeNode", "Ana", "moved."]


class Clash(Derived):
    kind: ClassVar[str] = "tree_node"


class Nameless(Derived):
    pass


def test_a_design_may_not_claim_another_designs_kind_or_none() -> None:
    builtins = _builtin_designs()
    with pytest.raises(ConfigError, match="record kind 'tree_node' is TreeNode already"):
        Registry([*builtins, Design(name="clash", records=[Clash])])
    with pytest.raises(ConfigError, match="Nameless has no kind"):
        Registry([*builtins, Design(name="nameless", records=[Nameless])])
    reg = Registry(builtins)
    assert {"tree_node", "category", "thesis", "event", "concept_node"} <= set(reg.kinds)
    assert "entity" not in reg.kinds  # the core's own, declared by no design
