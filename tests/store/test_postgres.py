"""PostgreSQL only: opening errors in one line, migrations under concurrency, the schema
guard. The contract itself is tested on both backends by test_conformance."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest
from test_conformance import prep

import pgtest
from memstrata.errors import StoreError
from memstrata.store import open_store
from memstrata.store.postgres import PostgresStore


@pytest.fixture
def url(tmp_path: Path):
    yield pgtest.database_url(tmp_path)
    pgtest.drop(tmp_path)


def one_line(exc: pytest.ExceptionInfo[StoreError]) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_both_url_schemes_open_the_postgres_store(url: str) -> None:
    for scheme in ("postgresql://", "postgres://"):
        store = open_store(scheme + url.split("://", 1)[1])
        assert isinstance(store, PostgresStore) and store.schema_version() >= 1
        store.close()


def test_an_unreachable_server_is_one_clear_line() -> None:
    with pytest.raises(StoreError) as exc:
        open_store("postgresql://postgres:secret@127.0.0.1:1/memstrata")
    text = one_line(exc)
    assert "no PostgreSQL server answers" in text and "secret" not in text


def test_wrong_credentials_and_a_missing_database(url: str) -> None:
    wrong = url.replace(pgtest.local_server().password, "not-the-password")
    with pytest.raises(StoreError) as exc:
        open_store(wrong)
    text = one_line(exc)
    assert "refused the user name or password" in text and "not-the-password" not in text
    with pytest.raises(StoreError) as exc:
        open_store(url.rsplit("/", 1)[0] + "/no_such_db")
    assert "no such database" in one_line(exc)


def test_missing_pgvector_that_cannot_be_created_writes_nothing(tmp_path: Path) -> None:
    """A database without pgvector, opened by a user who may not create it."""
    name = pgtest.db_name(tmp_path)
    with pgtest.admin() as conn:
        conn.execute("DROP ROLE IF EXISTS plain_user")
        conn.execute("CREATE ROLE plain_user LOGIN PASSWORD 'pw'")
        conn.execute(f"CREATE DATABASE {name} OWNER plain_user TEMPLATE template0")
    server = pgtest.local_server()
    try:
        with pytest.raises(StoreError) as exc:
            open_store(f"postgresql://plain_user:pw@127.0.0.1:{server.port}/{name}")
        text = one_line(exc)
        assert "pgvector" in text and "CREATE EXTENSION vector" in text
        with psycopg.connect(server.url(name)) as conn:
            tables = conn.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname='public'"
            ).fetchone()
        assert tables == (0,)  # nothing half-made
    finally:
        with pgtest.admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute("DROP ROLE IF EXISTS plain_user")


def test_a_newer_schema_is_refused(url: str) -> None:
    store = open_store(url)
    store.add_episodes("ns", [prep("e1", "kept as it was")])
    store.close()
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE memstrata_meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(StoreError) as exc:
        open_store(url)
    assert "schema version 99, newer" in one_line(exc) and "upgrade memstrata" in str(exc.value)


def test_another_applications_tables_are_left_alone(url: str) -> None:
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE episodes (id int)")
    with pytest.raises(StoreError) as exc:
        open_store(url)
    assert "another application" in one_line(exc)


def test_concurrent_first_opens_migrate_once(url: str) -> None:
    stores: list[PostgresStore] = []
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def opener() -> None:
        start.wait()
        try:
            stores.append(PostgresStore(url))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == [] and len(stores) == 6
        assert len({s.schema_version() for s in stores}) == 1
        stores[0].add_episodes("ns", [prep("e1", "one schema")])
        assert stores[5].get_episodes("ns", ["e1"])[0].text == "one schema"
    finally:
        for s in stores:
            s.close()


def test_a_closed_store_says_so(url: str) -> None:
    store = open_store(url)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.namespaces()


def test_memory_with_the_mnemis_recipe_over_postgres(url: str, embedder) -> None:
    """End to end, the engine unchanged: add, build, search on a PostgreSQL store."""
    import asyncio

    from memstrata import AsyncMemory
    from memstrata.config import Config

    async def scenario() -> list[str]:
        mem = await AsyncMemory.open(
            config=Config.load(store=url, recipe="mnemis"), embedder=embedder
        )
        try:
            said = [
                ("ana", "Ana moved to Lisbon in 2021 and opened a bakery."),
                ("ben", "Ben plays the piano every evening."),
                ("ana", "Ana's bakery sells sourdough bread with a crunchy crust."),
            ]
            for i, (who, text) in enumerate(said):
                await mem.add(text, id=f"e{i}", speaker=who, session="s1", namespace="demo")
            await mem.build(namespace="demo")
            stats = mem.store.stats("demo")[0]
            assert stats.builds["mnemis"]["done"] == 3 and stats.records_by_builder["mnemis"]
            found = await mem.search("Where does Ana live? Lisbon", namespace="demo")
            return [h.id for h in found.hits if h.kind == "episode"]
        finally:
            await mem.close()

    assert asyncio.run(scenario())[0] == "e0"


def test_the_cli_says_each_fault_in_one_line_and_exits_2(url: str) -> None:
    """What a user of `--db postgresql://...` sees: unreachable, wrong password, newer
    schema; one line on stderr, exit status 2, the password never shown."""
    import subprocess
    import sys

    store = open_store(url)
    store.close()
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE memstrata_meta SET value='99' WHERE key='schema_version'")
    cases = {
        "postgresql://me:secret@127.0.0.1:1/x": "no PostgreSQL server answers",
        url.replace(pgtest.local_server().password, "secret"): "user name or password",
        url: "newer",
    }
    for target, said in cases.items():
        run = subprocess.run(
            [sys.executable, "-m", "memstrata", "stats", "--db", target],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert run.returncode == 2, run.stderr
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and said in lines[0] and "secret" not in run.stderr, lines
