"""Conformance tests of episode updates, their history, conflicts on re-add and delete
reports, run on every backend of ``test_conformance.BACKENDS`` (plus an SQLite upgrade)."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from test_conformance import add_embedded, corpus_eps, dense, keys_of, prep

from memstrata.designs.mnemis.records import Category
from memstrata.models import Entity, Episode, Fact, Span
from memstrata.store import SQLiteStore, Store
from memstrata.store.base import DeleteReport, same_episode
from memstrata.store.sqlite import _migrations, _split_sql

BOAT = "We sailed a small boat across the lake."


def one(store: Store, eid: str, namespace: str = "ns") -> Episode:
    (ep,) = store.get_episodes(namespace, [eid])
    return ep


# updates ----------------------------------------------------------------------------------
def test_update_swaps_text_and_indexes_and_keeps_the_old_version(store: Store, embedder) -> None:
    add_embedded(store, embedder, "ns", corpus_eps())
    before = one(store, "volcano")
    assert dense(store, embedder, "ns", BOAT)  # the vector index is loaded now

    new = prep("volcano", BOAT, speaker="dan", session="s9", metadata={"fixed": True}, embed=True)
    add_embedded(store, embedder, "other", [new])  # puts the vector (another namespace)
    report = store.update_episodes("ns", [new])
    assert (report.updated, report.unchanged, report.missing) == (["volcano"], [], [])

    after = one(store, "volcano")
    assert (after.text, after.speaker, after.session, after.metadata) == (
        BOAT,
        "dan",
        "s9",
        {"fixed": True},
    )
    assert after.occurred_at is None  # every field is the new version's
    assert (after.key, after.seq, after.created_at) == (before.key, before.seq, before.created_at)
    assert store.bm25_episodes("ns", ["volcano"], 10) == []
    assert store.bm25_episodes("ns", ["ash"], 10) == []
    assert [k for k, _ in store.bm25_episodes("ns", ["sailed"], 10)] == [after.key]
    assert dense(store, embedder, "ns", BOAT)[0][0] == after.key
    old_text = "The volcano erupted and covered the village in grey ash."
    assert dense(store, embedder, "ns", old_text)[0][0] != after.key
    assert len(dense(store, embedder, "ns", BOAT)) == len(corpus_eps())
    assert set(store.speakers("ns")) == {"ana", "ben", "cleo", "dan"}

    (v1,) = store.episode_history("ns", "volcano")
    assert (v1.id, v1.namespace, v1.version, v1.text) == ("volcano", "ns", 1, old_text)
    assert (v1.speaker, v1.session, v1.occurred_at) == ("ana", "s1", before.occurred_at)
    assert v1.written_at == before.created_at and v1.replaced_at >= v1.written_at
    assert store.episode_history("ns", "piano") == []
    assert store.episode_history("other", "volcano") == []  # history is per namespace


def test_versions_are_numbered_and_chained(store: Store) -> None:
    store.add_episodes("ns", [prep("e", "one")])
    store.update_episodes("ns", [prep("e", "two")])
    store.update_episodes("ns", [prep("e", "three")])
    history = store.episode_history("ns", "e")
    assert [(v.version, v.text) for v in history] == [(1, "one"), (2, "two")]
    assert history[1].written_at == history[0].replaced_at
    assert one(store, "e").text == "three"
    assert store.bm25_episodes("ns", ["two"], 5) == []
    assert len(store.bm25_episodes("ns", ["three"], 5)) == 1
    assert store.stats("ns")[0].episodes == 1


def test_update_of_same_content_or_unknown_ids_writes_nothing(store: Store) -> None:
    store.add_episodes("ns", [prep("e", "stay", speaker="al", metadata={"a": 1, "b": [1, 2]})])
    report = store.update_episodes(
        "ns",
        [
            prep("e", "stay", speaker="al", metadata={"b": [1, 2], "a": 1}),
            prep("ghost", "never stored"),
        ],
    )
    assert (report.updated, report.unchanged, report.missing) == ([], ["e"], ["ghost"])
    assert store.update_episodes("nowhere", [prep("e", "x")]).missing == ["e"]
    assert not store.has_namespace("nowhere")
    assert store.get_episodes("ns", ["ghost"]) == []
    assert store.episode_history("ns", "e") == []


def test_update_cuts_provenance_and_requeues_the_episode(store: Store) -> None:
    store.add_episodes(
        "ns",
        [prep("e1", "Ana lives in Lisbon."), prep("e2", "She paints."), prep("e3", "Unrelated.")],
    )
    keys = keys_of(store, "ns", ["e1", "e2", "e3"])
    only_e1 = Entity(namespace="ns", name="Ana", sources=[Span(episode="e1", start=0, end=3)])
    both = Fact(
        namespace="ns",
        subject_id=only_e1.id,
        object_id="x",
        fact="f",
        sources=[Span(episode="e1", start=0, end=20), Span(episode="e2", start=0, end=11)],
    )
    on_e3 = Entity(namespace="ns", name="Paint", sources=[Span(episode="e3", start=0, end=5)])
    group = Category(namespace="ns", name="People", layer=1, child_ids=[only_e1.id, on_e3.id])
    store.write_records("ns", [only_e1, both, on_e3, group], built=("b", list(keys.values())))
    store.write_records("ns", [], built=("other", [keys["e1"]]))
    store.mark_failed("ns", "c", [(keys["e1"], "boom")], max_attempts=1, backoff_s=60)
    assert store.pending_episodes("ns", "b") == []

    store.update_episodes("ns", [prep("e1", "Bo lives in Porto.")])

    assert store.get_records("ns", "entity", [only_e1.id], builder=None) == []
    (fact,) = store.get_records("ns", "fact", builder=None)
    assert fact.sources == [Span(episode="e2", start=0, end=11)]
    (cat,) = store.get_records("ns", "category", builder=None)
    assert isinstance(cat, Category) and cat.child_ids == [on_e3.id]  # no dangling child
    assert [e.id for e in store.pending_episodes("ns", "b")] == ["e1"]
    assert [e.id for e in store.pending_episodes("ns", "other")] == ["e1", "e2", "e3"]
    assert [e.id for e in store.pending_episodes("ns", "c")] == ["e1", "e2", "e3"]
    assert store.build_failures("ns") == []  # the failure was about the old text
    assert store.built_keys("ns", "b") == {keys["e2"], keys["e3"]}


def test_another_store_object_sees_an_update(open_backend, embedder) -> None:
    """Same keys and the same count of vectors: the reader must still reload the vector."""
    writer, reader = open_backend(), open_backend()
    add_embedded(writer, embedder, "ns", corpus_eps())
    volcano = keys_of(writer, "ns", ["volcano"])["volcano"]
    assert dense(reader, embedder, "ns", BOAT)[0][0] != volcano  # loaded, old vector
    assert reader.speakers("ns")

    new = prep("volcano", BOAT, speaker="dan", embed=True)
    add_embedded(writer, embedder, "scratch", [new])
    writer.update_episodes("ns", [new])

    hits = dense(reader, embedder, "ns", BOAT)
    assert hits[0][0] == volcano and hits[0][1] > 0.75 and len(hits) == len(corpus_eps())
    assert [k for k, _ in reader.bm25_episodes("ns", ["boat"], 5)] == [volcano]
    assert reader.bm25_episodes("ns", ["volcano"], 5) == []
    assert "dan" in reader.speakers("ns")
    assert [v.text for v in reader.episode_history("ns", "volcano")] == [corpus_eps()[0].text]


def test_history_goes_with_its_episode(store: Store) -> None:
    store.add_episodes("ns", [prep("e", "one"), prep("f", "keep")])
    store.update_episodes("ns", [prep("e", "two")])
    assert store.delete_episodes("ns", ["e"]) == 1
    store.add_episodes("ns", [prep("e", "fresh start")])
    assert store.episode_history("ns", "e") == []  # the new episode has no past
    store.update_episodes("ns", [prep("f", "changed")])
    store.delete_namespace("ns")
    assert store.episode_history("ns", "f") == []


# conflicts on re-add ----------------------------------------------------------------------
def test_re_add_compares_every_field_not_only_the_text(store: Store) -> None:
    t = datetime(2024, 3, 2, 10, 21, tzinfo=UTC)
    base = dict(speaker="al", session="s", occurred_at=t, metadata={"a": 1, "b": {"c": 2}})
    store.add_episodes("ns", [prep("e", "text", **base)])  # type: ignore[arg-type]
    same = prep(
        "e",
        "text",
        speaker="al",
        session="s",
        occurred_at=t.astimezone(timezone(timedelta(hours=2))),  # the same instant
        metadata={"b": {"c": 2}, "a": 1},  # another key order
    )
    assert store.add_episodes("ns", [same]).existing == ["e"]
    for change in (
        dict(speaker="bo"),
        dict(session=None),
        dict(occurred_at=t + timedelta(seconds=1)),
        dict(occurred_at=t.replace(tzinfo=None)),  # naive is another reading
        dict(metadata={"a": 1}),
        dict(role="user"),
    ):
        other = prep("e", "text", **{**base, **change})  # type: ignore[arg-type]
        assert store.add_episodes("ns", [other]).conflicts == ["e"], change
        assert not same_episode(other, one(store, "e"))
    assert store.add_episodes("ns", [prep("e", "TEXT", **base)]).conflicts == ["e"]  # type: ignore[arg-type]
    assert one(store, "e").text == "text" and store.episode_history("ns", "e") == []


# delete reports ---------------------------------------------------------------------------
def test_delete_reports_the_ids_that_were_not_stored(store: Store) -> None:
    store.add_episodes("ns", [prep("a", "x"), prep("b", "y")])
    report = store.delete_episodes("ns", ["a", "nope", "a", "zip"])
    assert isinstance(report, DeleteReport) and report == 1 and int(report) == 1
    assert report.missing == ["nope", "zip"]
    assert repr(report) == "DeleteReport(1, missing=['nope', 'zip'])"
    again = store.delete_episodes("ns", ["a"])
    assert again == 0 and again.missing == ["a"]
    assert store.delete_episodes("nowhere", ["b"]).missing == ["b"]
    assert store.delete_episodes("ns", ["b"]).missing == []


# SQLite: upgrading a file written before episode history existed -------------------------
def old_store(path: Path, version: int) -> None:
    """A file as a memstrata at schema ``version`` wrote it: its migrations, no more."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memstrata_meta (key TEXT PRIMARY KEY, value TEXT)")
    for number, sql in _migrations():
        if number <= version:
            for statement in _split_sql(sql):
                conn.execute(statement)
    conn.execute("INSERT INTO memstrata_meta VALUES ('schema_version', ?)", (str(version),))
    conn.commit()
    conn.close()


def test_a_version_2_file_is_upgraded_and_can_be_updated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old_store(path, 2)
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO namespaces(name, created_at) VALUES ('ns', '2024-01-01')")
    conn.execute("CREATE VIRTUAL TABLE fts_1 USING fts5(body)")
    conn.execute(
        "INSERT INTO episodes(namespace_id, external_id, text, seq, content_hash, created_at) "
        "VALUES (1, 'e', 'written by an older memstrata', 1, x'00', '2024-01-01')"
    )
    conn.commit()
    conn.close()

    store = SQLiteStore(path)
    assert store.schema_version() == max(n for n, _ in _migrations())
    assert store.update_episodes("ns", [prep("e", "corrected")]).updated == ["e"]
    assert [v.text for v in store.episode_history("ns", "e")] == ["written by an older memstrata"]
    store.close()


def test_records_of_a_version_3_file_have_no_owner_until_adopted(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    old_store(path, 3)
    store = SQLiteStore(path)
    store.add_episodes("ns", [prep("e", "Ana lives in Lisbon")])
    ent = Entity(namespace="ns", name="Ana", sources=[Span(episode="e", start=0, end=3)])
    store.put_records("ns", [ent], owner="x")
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE records SET builder=''")  # as version 3 stored them
    conn.commit()
    conn.close()

    store = SQLiteStore(path)
    assert store.unowned_records() == {"ns": {"entity": 1}}
    assert store.get_records("ns", "entity", builder="x") == []
    assert store.adopt_records("ns", "entity", "x") == 1
    assert store.unowned_records() == {}
    assert [r.builder for r in store.get_records("ns", "entity", builder="x")] == ["x"]
    store.close()


def test_a_version_7_file_keeps_its_hierarchy_links_as_record_links(tmp_path: Path) -> None:
    """v8 drops the per-kind tables and renames the hierarchy's link table: links written
    by v7 still cascade when a child goes."""
    path = tmp_path / "v7.db"
    old_store(path, 7)
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO namespaces(name, created_at) VALUES ('ns', '2024-01-01')")
    conn.execute("CREATE VIRTUAL TABLE fts_1 USING fts5(body)")
    for key, text in ((1, "Ana"), (2, "Ben")):
        conn.execute(
            "INSERT INTO episodes(namespace_id, external_id, text, seq, content_hash, "
            "created_at) VALUES (1, ?, ?, ?, ?, '2024-01-01')",
            (f"e{key}", text, key, bytes([key])),
        )
    for rid, kind, data, episode in (
        ("a", "entity", {"id": "a", "namespace": "ns", "name": "Ana"}, 1),
        ("b", "entity", {"id": "b", "namespace": "ns", "name": "Ben"}, 2),
        ("c", "category", {"id": "c", "namespace": "ns", "name": "people", "layer": 1,
                           "child_ids": ["a", "b"]}, 2),
    ):  # fmt: skip
        conn.execute(
            "INSERT INTO records(id, namespace_id, kind, data, created_at, updated_at, builder) "
            "VALUES (?,1,?,?,'2024-01-01','2024-01-01','mnemis')",
            (rid, kind, json.dumps(data)),
        )
        conn.execute("INSERT INTO provenance VALUES (?,?,0,3)", (rid, episode))
    conn.executemany("INSERT INTO category_links VALUES ('c', ?)", [("a",), ("b",)])
    conn.commit()
    conn.close()

    store = SQLiteStore(path)
    try:
        assert store.schema_version() >= 8  # and every later migration
        tables = {
            r[0] for r in store._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        assert "record_links" in tables
        assert not tables & {"category_links", "entities", "facts", "categories", "tree_nodes"}
        assert store.delete_episodes("ns", ["e1"]) == 1  # Ana's entity rests on it alone
        assert [r.id for r in store.get_records("ns", "entity", builder="mnemis")] == ["b"]
        (cat,) = store.get_records("ns", "category", builder="mnemis")
        assert isinstance(cat, Category) and cat.child_ids == ["b"]
        links = store._conn.execute("SELECT parent_id, child_id FROM record_links").fetchall()
        assert links == [("c", "b")]
    finally:
        store.close()
