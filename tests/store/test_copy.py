"""``memstrata copy``: a store built by every design's heuristic tier goes SQLite ->
PostgreSQL -> SQLite with every row, searches rank alike, and the copy works as a store
(show, update, delete and their repairs); a copy that fails mid-way leaves whole
namespaces only, and the CLI refuses a target holding a namespace of the source."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import pgtest
from memstrata import AsyncMemory, copying
from memstrata.config import Config
from memstrata.errors import StoreError
from memstrata.llm.types import LLMCallRecord
from memstrata.store import Store, open_store

RECIPES = ["mnemis", "personalai", "higmem", "memtree", "mindgraph"]

SAID = [
    ("Ana", "Ana moved to Lisbon in 2021 and opened a bakery near the river."),
    ("Ben", "Ben plays the piano every evening after work at the hospital."),
    ("Ana", "My bakery sells sourdough bread with a crunchy crust and almond cakes."),
    ("Ben", "Last weekend Ben hiked in the Alps with his sister Clara."),
    ("Ana", "Ana adopted a grey cat called Pepper from the shelter."),
    ("Ben", "Clara is a nurse too; she works nights at the same hospital."),
    ("Ana", "Pepper sleeps on the flour sacks, which my customers find funny."),
    ("Ben", "Ben is learning Portuguese because he wants to visit Ana in Lisbon."),
    ("Ana", "The bakery won a prize for its pastel de nata in March."),
    ("Ben", "Ben bought a second-hand piano from a teacher in Porto."),
    ("Ana", "Ana's brother Rui fixes bicycles and delivers bread on Sundays."),
    ("Ben", "The Alps trip ended with a storm, and Clara lost her camera."),
]


def turns() -> list[dict[str, Any]]:
    out = []
    for i, (who, text) in enumerate(SAID):
        row: dict[str, Any] = {
            "id": f"e{i}",
            "text": text,
            "speaker": who,
            "session": f"s{i // 6 + 1}",
            "at": datetime(2024, 3, 1 + i, 9, 30, tzinfo=UTC).isoformat(),
        }
        if i == 4:
            row["metadata"] = {"image_caption": "a grey cat asleep on flour sacks"}
        out.append(row)
    return out


def build_source(path: Path, embedder: Any) -> None:
    """Five namespaces, one per design, built on the heuristic tier; then an update and a
    delete left unrepaired (history and the repair log), failed and dead marks, a job,
    API keys and LLM calls."""

    async def go() -> None:
        mem = await AsyncMemory.open(config=Config.load(store=str(path)), embedder=embedder)
        try:
            for recipe in RECIPES:
                ns = f"ns-{recipe}"
                await mem.add_many(turns(), namespace=ns)
                await mem.build(namespace=ns, recipe=recipe, tier="heuristic")
                await mem.update("e3", "Ben hiked in the Dolomites with Clara.", namespace=ns)
        finally:
            await mem.close()

    asyncio.run(go())
    store = open_store(path)
    try:
        for recipe in RECIPES:  # through the store: the repairs stay in the log, pending
            store.delete_episodes(f"ns-{recipe}", ["e6"])
        ns = "ns-mnemis"
        (ep,) = store.get_episodes(ns, ["e3"])
        store.mark_failed(ns, "mnemis", [(ep.key, "timeout")], max_attempts=3, backoff_s=30)
        store.mark_failed(ns, "other", [(ep.key, "bad reply")], max_attempts=1, backoff_s=30)
        store.add_job(ns, "job-1", "add", "mnemis", ["mnemis"], ["e1", "e2", "e3"])
        store.add_api_key("d" * 64, "ms_aaaa", ["*"], "admin", "ops")
        key = store.add_api_key("e" * 64, "ms_bbbb", [ns], "read", None)
        store.revoke_api_key(key.id)
        for where in (ns, None):
            store.record_llm_call(
                LLMCallRecord(
                    stage="extract",
                    backend="fake",
                    model="m",
                    prompt_tokens=10,
                    completion_tokens=5,
                    latency_ms=12.5,
                    cached=False,
                    ok=True,
                    error=None,
                    attempts=1,
                    request_hash=f"h-{where}",
                    created_at=datetime(2024, 3, 1, tzinfo=UTC),
                    namespace=where,
                    dropped={"cut:items": 1},
                )
            )
    finally:
        store.close()


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    path = tmp_path_factory.mktemp("copy") / "source.db"
    build_source(path, embedder)
    return path


@pytest.fixture
def url(tmp_path: Path):
    yield pgtest.database_url(tmp_path)
    pgtest.drop(tmp_path)


def copy_all(a: Store, b: Store) -> copying.CopyReport:
    names, skipped = copying.plan(a, b, None)
    assert skipped == []
    return copying.copy_store(a, b, names)


def assert_same(a: Store, b: Store, embedder: Any) -> None:
    for name in a.namespaces():
        assert copying.dump_differences(a, b, name) == []
    assert copying.global_differences(a, b) == []
    assert a.stats() == b.stats()
    assert a.llm_usage() == b.llm_usage() and a.llm_usage("ns-mnemis") == b.llm_usage("ns-mnemis")
    assert [(k.prefix, k.scope, k.revoked_at) for k in a.api_keys()] == [
        (k.prefix, k.scope, k.revoked_at) for k in b.api_keys()
    ]
    for name in a.namespaces():  # the full-text index was rebuilt: same BM25 scores
        for terms in (["bakery"], ["piano", "clara", "hospital"], ["ana"]):
            hits = [s.bm25_episodes(name, terms, 20) for s in (a, b)]
            ids = [s.episodes_by_key([k for k, _ in h]) for s, h in zip((a, b), hits, strict=True)]
            got = [[(e[k].id, round(v, 9)) for k, v in h] for e, h in zip(ids, hits, strict=True)]
            assert got[0] == got[1] and got[0]
    runs, differ = asyncio.run(
        copying.search_differences(a, b, a.namespaces(), Config.load(), embedder)
    )
    assert runs == len(RECIPES) * copying.QUERIES and differ == []


def show_names(store: Store, recipe: str) -> list[str]:
    ns = f"ns-{recipe}"
    if recipe == "memtree":
        return ["root"]
    if recipe == "higmem":
        return ["e1"]
    kind, attr = ("concept_node", "label") if recipe == "mindgraph" else ("entity", "name")
    return [getattr(r, attr) for r in store.get_records(ns, kind, builder=recipe)[:3]]


def test_sqlite_to_postgres_to_sqlite_keeps_everything(
    source: Path, url: str, tmp_path: Path, embedder: Any
) -> None:
    a, b, c = open_store(source), open_store(url), open_store(tmp_path / "back.db")
    try:
        counts = a.export_namespace("ns-mnemis").counts()
        assert counts["episodes"] == 11 and counts["versions"] == 1 and counts["repairs"]
        assert counts["marks"]["mnemis/failed"] == 1 and counts["marks"]["other/dead"] == 1
        assert counts["jobs"] == 1 and counts["llm calls"] == 1 and counts["provenance"]
        for recipe in RECIPES:
            assert a.stats(f"ns-{recipe}")[0].records_by_builder[recipe]
        report = copy_all(a, b)
        assert report.namespaces == sorted(f"ns-{r}" for r in RECIPES)
        assert (report.keys, report.calls) == (2, 1) and report.embeddings > 0
        assert_same(a, b, embedder)
        copy_all(b, c)
        assert_same(a, c, embedder)
        assert a.episode_history("ns-memtree", "e3") == c.episode_history("ns-memtree", "e3")
        # a copy is as good as the original: show, then update and delete with repairs
        # (on a byte copy of the original, which other tests share)
        src, dst = sqlite3.connect(source), sqlite3.connect(tmp_path / "orig.db")
        src.backup(dst)
        src.close(), dst.close()
        results = [asyncio.run(_use(tmp_path / name, embedder)) for name in ("orig.db", "back.db")]
        assert results[0] == results[1]
    finally:
        a.close(), b.close(), c.close()


async def _use(path: Path | str, embedder: Any) -> list[Any]:
    """What show prints for each design, then what a delete, an update and a rebuild
    leave; on the original and on a copy these must be equal."""
    seen: list[Any] = []
    mem = await AsyncMemory.open(config=Config.load(store=str(path)), embedder=embedder)
    try:
        for recipe in RECIPES:
            ns = f"ns-{recipe}"
            names = show_names(mem.store, recipe)
            assert names, recipe
            for name in names:
                nodes = await mem.show(name, namespace=ns)
                assert nodes, (recipe, name)
                seen.append([n.model_dump() for n in nodes])
        for recipe in RECIPES:
            ns = f"ns-{recipe}"
            await mem.delete(["e0"], namespace=ns)
            await mem.update("e8", "The bakery won a prize for croissants.", namespace=ns)
            await mem.build(namespace=ns, recipe=recipe, tier="heuristic")
            stats = mem.store.stats(ns)[0]
            assert stats.repairs == {} and stats.episodes == 10
            cited = {
                s.episode
                for kind in stats.records
                for r in mem.store.get_records(ns, kind, builder=None)
                for s in r.sources
            }
            assert "e0" not in cited and "e6" not in cited
            found = await mem.search("Who won a prize for croissants?", namespace=ns, recipe=recipe)
            seen.append([(h.kind, h.text) for h in found.hits])
    finally:
        await mem.close()
    return seen


def test_a_copy_that_fails_mid_way_leaves_whole_namespaces(
    source: Path, url: str, monkeypatch: pytest.MonkeyPatch, embedder: Any
) -> None:
    a, b = open_store(source), open_store(url)
    try:
        names, _ = copying.plan(a, b, None)
        real = type(b)._import_marks  # type: ignore[attr-defined]
        calls = []

        def failing(*args: Any) -> None:
            calls.append(1)
            if len(calls) == 2:  # the second namespace: its episodes and records are in
                raise StoreError("injected failure")
            real(*args)

        monkeypatch.setattr(type(b), "_import_marks", staticmethod(failing))
        with pytest.raises(StoreError, match="injected"):
            copying.copy_store(a, b, names)
        monkeypatch.undo()
        assert b.namespaces() == names[:1]
        assert b.export_namespace(names[0]).counts() == a.export_namespace(names[0]).counts()
        with pytest.raises(copying.CopyRefused, match="already holds 1 namespace"):
            copying.plan(a, b, None)
        todo, skipped = copying.plan(a, b, None, resume=True)
        assert skipped == names[:1] and todo == names[1:]
        copying.copy_store(a, b, todo)
        assert_same(a, b, embedder)
    finally:
        a.close(), b.close()


def test_sqlite_to_sqlite(source: Path, tmp_path: Path, embedder: Any) -> None:
    a, d = open_store(source), open_store(tmp_path / "d.db")
    try:
        copy_all(a, d)
        assert_same(a, d, embedder)
    finally:
        a.close(), d.close()


def test_sqlite_import_failing_mid_way_writes_nothing(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, c = open_store(source), open_store(tmp_path / "c.db")
    try:
        dump = a.export_namespace("ns-higmem")
        monkeypatch.setattr(type(c), "_import_jobs", _raise)
        with pytest.raises(StoreError, match="injected"):
            c.import_namespace(dump)
        monkeypatch.undo()
        assert c.namespaces() == [] and not c.has_namespace("ns-higmem")
        c.import_namespace(dump)
        assert c.export_namespace("ns-higmem").counts() == dump.counts()
        with pytest.raises(StoreError, match="already has a namespace 'ns-higmem'"):
            c.import_namespace(dump)
    finally:
        a.close(), c.close()


def _raise(*args: Any) -> None:
    raise StoreError("injected failure")


def cli(env: dict[str, str], *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "memstrata", "copy", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == code, proc.stderr + proc.stdout
    return proc


def test_the_copy_command(source: Path, url: str, subprocess_env: dict[str, str]) -> None:
    done = cli(subprocess_env, "--from", str(source), "--to", url, "-n", "ns-memtree")
    assert "copied 1 namespace, " in done.stdout
    assert "verified: 1 namespace holds the same rows" in done.stdout
    assert "and 8 searches rank the same episodes" in done.stdout
    refused = cli(subprocess_env, "--from", str(source), "--to", url, code=2)
    line = refused.stderr.strip()
    assert "\n" not in line and "already holds 1 namespace of the source ('ns-memtree')" in line
    same = cli(subprocess_env, "--from", str(source), "--to", f"sqlite:///{source}", code=2)
    assert "the same store" in same.stderr
    missing = cli(subprocess_env, "--from", "/nonexistent/x.db", "--to", url, code=2)
    assert missing.stderr.count("\n") == 1
    rest = cli(subprocess_env, "--from", str(source), "--to", url, "--resume", "--no-verify")
    assert "ns-memtree: already copied, skipped" in rest.stderr
    assert "copied 4 namespaces" in rest.stdout and "verified" not in rest.stdout
