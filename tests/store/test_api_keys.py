"""The stores' API key tables, on both backends: a key's public id is random (nothing to
count or guess from it), keys are revoked by that id, and a store that has had a key stays
guarded until the operator lifts the guard of its revoked keys. A store written before
these ids gets one for each of its keys at migration, and stays guarded."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest

import pgtest
from memstrata.store import Store, open_store
from memstrata.store import sqlite as sqlite_store
from memstrata.store.postgres import store as pg_store

ID = re.compile(r"key_[0-9a-f]{24}")


def test_key_ids_are_random_and_keys_are_revoked_by_them(store: Store) -> None:
    made = [store.add_api_key(f"{i:064x}", f"msk_{i}", ["a"], "read", None) for i in range(3)]
    ids = [k.id for k in made]
    assert all(ID.fullmatch(i) for i in ids) and len(set(ids)) == 3
    assert [k.id for k in store.api_keys()] == ids  # listed in the order they were made
    assert store.api_key(f"{1:064x}") == made[1]
    assert not store.revoke_api_key("2") and not store.revoke_api_key("key_" + "0" * 24)
    assert store.revoke_api_key(ids[1]) and not store.revoke_api_key(ids[1])
    assert [k.revoked_at is not None for k in store.api_keys()] == [False, True, False]


def test_a_store_that_had_keys_stays_guarded(store: Store) -> None:
    assert not store.keys_guarded()
    first = store.add_api_key("a" * 64, "msk_a", ["a"], "admin", None)
    second = store.add_api_key("b" * 64, "msk_b", ["b"], "read", None)
    assert store.keys_guarded()
    assert store.revoke_api_key(first.id)
    assert store.lift_key_guard() == 1  # the revoked key no longer guards; the live one does
    assert store.keys_guarded()
    assert store.revoke_api_key(second.id)
    assert store.keys_guarded()  # every key revoked: still guarded
    assert store.lift_key_guard() == 1
    assert not store.keys_guarded()
    assert [k.revoked_at is not None for k in store.api_keys()] == [True, True]  # kept
    store.add_api_key("c" * 64, "msk_c", ["c"], "read", None)
    assert store.keys_guarded()


OLD_SQLITE = 10  # the schema before key ids
OLD_POSTGRES = 3


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_keys_of_an_older_store_get_ids_and_keep_it_guarded(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = sqlite_store if backend == "sqlite" else pg_store
    every = module._migrations()
    old = OLD_SQLITE if backend == "sqlite" else OLD_POSTGRES
    target = str(tmp_path / "old.db") if backend == "sqlite" else pgtest.database_url(tmp_path)
    try:
        monkeypatch.setattr(module, "_migrations", lambda: [m for m in every if m[0] <= old])
        open_store(target).close()
        sql = (
            "INSERT INTO api_keys(hash, prefix, namespaces, scope, label, created_at, "
            "revoked_at) VALUES ({0},'msk_old','[\"a\"]','read',NULL,'2026-01-01',{0})"
        )
        if backend == "sqlite":
            import sqlite3

            with sqlite3.connect(target) as conn:
                conn.execute(sql.format("?"), ("d" * 64, "2026-01-02"))
                conn.execute(sql.format("?"), ("e" * 64, "2026-01-02"))
        else:
            with psycopg.connect(target, autocommit=True) as conn:
                conn.execute(sql.format("%s"), ("d" * 64, "2026-01-02"))
                conn.execute(sql.format("%s"), ("e" * 64, "2026-01-02"))
        monkeypatch.setattr(module, "_migrations", lambda: every)
        store = open_store(target)
        try:
            found = store.api_keys()
            assert len(found) == 2 and all(ID.fullmatch(k.id) for k in found)
            assert found[0].id != found[1].id
            assert store.keys_guarded()  # both revoked before the migration: still guarded
            made = store.add_api_key("f" * 64, "msk_new", ["a"], "read", None)
            assert ID.fullmatch(made.id)
        finally:
            store.close()
    finally:
        if backend == "postgres":
            pgtest.drop(tmp_path)
