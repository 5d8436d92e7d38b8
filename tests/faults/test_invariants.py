"""The invariant checker finds each kind of damage it names (so a clean result means
something): a sound store passes, then each test breaks one thing through the store."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from invariants import assert_sound, builder_records, check_store, expected_lines

from memstrata.designs.memtree.records import TreeNode
from memstrata.eval.faults import NS, conversation
from memstrata.memory import Memory
from memstrata.models import Entity, Fact, Span
from memstrata.store import SQLiteStore

LINES = conversation(30)
BUILDERS = ("mnemis", "memtree")


@pytest.fixture(scope="module")
def sound(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    db = tmp_path_factory.mktemp("inv") / "sound.db"
    with Memory.open(db, embedder=embedder, **{"build.mode": "manual"}) as m:
        m.add_many(LINES, namespace=NS)
        for recipe in BUILDERS:
            m.build(NS, recipe=recipe)
    return db


@pytest.fixture
def store(sound: Path, tmp_path: Path) -> Any:
    db = tmp_path / "copy.db"
    shutil.copy(sound, db)
    s = SQLiteStore(db)
    yield s
    s.close()


def test_a_sound_store_passes(store: SQLiteStore) -> None:
    assert_sound(store, NS, expected_lines(LINES), BUILDERS)


def test_a_lost_and_an_altered_episode_are_found(store: SQLiteStore) -> None:
    expected = expected_lines(LINES)
    expected["never-stored"] = {"text": "x"}
    expected[LINES[3]["id"]] = {"text": "another text"}
    found = check_store(store, NS, expected, BUILDERS)
    assert found.lost == ["episode never-stored is missing"]
    assert found.altered == [f"episode {LINES[3]['id']}: text differs from the input"]


def test_an_episode_that_should_be_gone_is_found(store: SQLiteStore) -> None:
    expected = expected_lines(LINES)
    del expected[LINES[0]["id"]]
    assert check_store(store, NS, expected, BUILDERS).unexpected == [
        f"episode {LINES[0]['id']} is stored"
    ]


def test_a_duplicated_entity_is_found(store: SQLiteStore) -> None:
    entity = builder_records(store, NS, "mnemis")[0]
    assert isinstance(entity, Entity)
    twin = entity.model_copy(update={"id": "twin"})
    store.put_records(NS, [twin], owner="mnemis")
    found = check_store(store, NS, expected_lines(LINES), BUILDERS)
    assert any("identical records" in d for d in found.duplicates), found.duplicates
    assert any(f"entity {entity.name.casefold()!r}" in d for d in found.duplicates)


def test_a_dangling_link_and_an_orphan_are_found(store: SQLiteStore) -> None:
    fact = next(r for r in builder_records(store, NS, "mnemis") if isinstance(r, Fact))
    store.put_records(NS, [fact.model_copy(update={"object_id": "nowhere"})], owner="mnemis")
    stray = TreeNode(namespace=NS, parent_id="no-parent", depth=1, content="x", sources=[])
    store.put_records(NS, [stray], owner="memtree")
    found = check_store(store, NS, expected_lines(LINES), BUILDERS)
    assert any("object_id names a missing entity nowhere" in d for d in found.dangling)
    assert any("parent_id names a missing tree_node no-parent" in d for d in found.dangling)
    assert found.orphans == [f"memtree tree_node {stray.id} rests on no existing episode"]


def test_a_source_outside_its_episode_is_found(store: SQLiteStore) -> None:
    ep = LINES[5]
    wide = Span(episode=ep["id"], start=0, end=len(ep["text"]) + 50)
    fact = next(r for r in builder_records(store, NS, "mnemis") if isinstance(r, Fact))
    store.put_records(NS, [fact.model_copy(update={"sources": [wide]})], owner="mnemis")
    found = check_store(store, NS, expected_lines(LINES), BUILDERS)
    assert any("outside its text" in d for d in found.dangling), found.dangling


def test_unfinished_work_and_removed_words_are_found(store: SQLiteStore) -> None:
    store.forget_builds(NS, "memtree", [LINES[7]["id"]])
    found = check_store(store, NS, expected_lines(LINES), BUILDERS, gone_words=["Zebulon"])
    assert found.unfinished == [f"memtree: {len(LINES) - 1} of {len(LINES)} episodes done"]
    assert found.structure and all("Zebulon" in s for s in found.structure)
