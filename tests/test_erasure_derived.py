"""Deleted means gone, for what memstrata derived from a text besides its records: the
error texts of failed calls and builds that quote it, the vectors of the texts a design
made from it, the replies made from an earlier version of it, and the places a delete
reaches late (a job's record and events, ``stats``, a batch the worker holds).

Real stores (SQLite, and PostgreSQL after the documented ``vacuum``), the real MiniLM,
MemTree on the LLM tier through a scripted model whose replies quote the turns.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from erasure_helpers import (
    NS,
    Quoting,
    Recording,
    build_everything,
    folders,
    open_memory,
    scan,
    settle,
    summarize,
    turns,
    use_llm,
    vector_of,
)
from memstrata import copying, jobs
from memstrata.engine.worker import run_worker
from memstrata.llm import ResponseCache, ScriptedBackend
from memstrata.llm.fence import unfence
from memstrata.llm.types import Message
from memstrata.memory import Memory
from memstrata.retrieval.text import content_terms


@pytest.fixture
def secret() -> str:
    return "hunter" + uuid.uuid4().hex[:10]


def refusing(secret: str) -> Callable[[list[Message]], None]:
    """A model that fails every merge whose existing summary holds the secret, with an
    error quoting what it was given (as providers' validation errors do)."""

    def fail(messages: list[Message]) -> None:
        user = unfence(messages[-1].content)
        new = user.split("[New Information]")[-1].strip().splitlines()[0]
        if secret in user and secret not in new:
            raise RuntimeError(f"the model could not merge this summary: {user[:600]}")

    return fail


def test_no_stored_error_keeps_a_deleted_text(
    store_at: Callable[[str], str],
    tmp_path: Path,
    embedder: Any,
    monkeypatch: pytest.MonkeyPatch,
    secret: str,
) -> None:
    """Item 1: a failed call's error (``llm_calls``) and a failed build's (the marks of
    other episodes) that quote the deleted turn lose their text with it; the job that
    reports those failures, its events and ``stats`` show none of it (item 4)."""
    target = store_at("m")
    backend = Quoting({"summary": lambda msgs: json.loads(summarize(msgs))}, refusing(secret))
    with use_llm(monkeypatch, backend), open_memory(target, embedder, tmp_path / "c", True) as m:
        m.add_many(turns(secret))
        job = m.store.add_job(NS, "job_err", "add", "deep", ["memtree"], ["t2", "t3", "t4"])
        assert job == 3
        m.build(recipe="deep")
        failures = m.store.build_failures(NS)
        assert {f.episode for f in failures} >= {"t3"}
        assert any(secret in f.error for f in failures)
        if target.startswith("postgres"):
            m.store._conn.execute("CHECKPOINT")  # type: ignore[attr-defined]
        assert scan(folders(target, tmp_path), secret)

        assert m.delete(["t2"]) == 1

        failures = m.store.build_failures(NS)
        assert {f.episode for f in failures} >= {"t3"}  # still failed, and still said so
        assert all(secret not in f.error for f in failures)
        assert all(f.error.startswith("LLMBackendError: ") for f in failures)  # its class
        status = asyncio.run(jobs.status(m._inner, "job_err"))
        assert status is not None and status.failures
        events = asyncio.run(_first(jobs.follow(m._inner, "job_err", 0.0)))
        shown = [status.model_dump_json(), events, json.dumps(m.stats(NS), default=str)]
        assert all(secret not in s for s in shown)
        settle(m, target)
        assert scan(folders(target, tmp_path), secret) == []


async def _first(events: Any) -> str:
    async for event in events:
        return str(event.model_dump_json())
    return ""


def test_the_vectors_of_texts_made_from_a_deleted_turn_go_with_it(
    store_at: Callable[[str], str],
    tmp_path: Path,
    embedder: Any,
    monkeypatch: pytest.MonkeyPatch,
    secret: str,
) -> None:
    """Item 2: the vectors of what the designs made from the turn (MemTree's summaries
    on the LLM tier, Mnemis's names and facts, the texts their routes embed) go in the
    delete, as the turn's own do; vectors of texts that share no word with it stay."""
    target = store_at("m")
    recording = Recording(embedder)
    cache = tmp_path / "cache"
    with open_memory(target, recording, cache, llm=False) as m:
        build_everything(m, secret)
    backend = Quoting({"summary": lambda msgs: json.loads(summarize(msgs))})
    with use_llm(monkeypatch, backend), open_memory(target, recording, cache, llm=True) as m:
        assert all(not r.errors for r in m.build(recipe="deep"))
        for recipe in ("default", "mnemis", "deep"):
            m.search(f"what is the wifi password {secret}", k=3, recipe=recipe)
            m.search("tomatoes in the garden", k=3, recipe=recipe)
        # what was embedded and stored (a question's vector is not kept)
        kept = [t for t in dict.fromkeys(recording.texts) if vector_of(m.store, embedder, t)]
        made = [t for t in kept if secret in t]
        assert len(made) > 2  # the turn's own two, and texts derived from it
        removed = set(content_terms(turns(secret)[2]["text"].lower()))
        apart = [t for t in kept if not removed & set(content_terms(t.lower()))]
        assert len(apart) > 10

        assert m.delete(["t2"]) == 1

        assert [t for t in made if vector_of(m.store, embedder, t)] == []
        assert [t for t in apart if not vector_of(m.store, embedder, t)] == []
        hits = m.search("Grandma Odile apricot tart", k=3, recipe="deep").hits
        assert "t5" in {s for h in hits for s in h.sources}


def delete_whole(m: Memory) -> int:
    """The namespace deleted whole (``delete_namespace``, or ``delete`` without ids
    where that verb is not there)."""
    verb = getattr(m, "delete_namespace", None)
    return int(verb(NS) if verb is not None else m.delete(namespace=NS))


def test_deleting_a_namespace_purges_the_replies_made_from_its_history(
    store_at: Callable[[str], str],
    tmp_path: Path,
    embedder: Any,
    monkeypatch: pytest.MonkeyPatch,
    secret: str,
) -> None:
    """Item 3: a reply made from a text that an update replaced (history kept) goes
    when the namespace is deleted, as a reply made from a current text does."""
    target = store_at("m")
    cache = tmp_path / "cache"
    with use_llm(monkeypatch, Quoting()), open_memory(target, embedder, cache, llm=True) as m:
        m.add_many([turns(secret)[2]])
        answer = m.ask("What is the wifi password?")
        assert secret in answer.text
        m.update("t2", "Tomatoes grow slowly.")
        assert secret in m.history("t2")[0].text
        assert scan([cache], secret)

        assert delete_whole(m) == 1

        settle(m, target)
        assert scan(folders(target, tmp_path), secret) == []
        with ResponseCache(cache / "llm-cache.sqlite") as replies:
            assert len(replies) == 0


def test_an_episode_updated_with_history_then_deleted_leaves_no_version(
    store_at: Callable[[str], str],
    tmp_path: Path,
    embedder: Any,
    monkeypatch: pytest.MonkeyPatch,
    secret: str,
) -> None:
    """Item 4: ``update`` keeps the secret version in the history; ``delete`` then takes
    every version: rows, vectors and the replies made from any of them."""
    target = store_at("m")
    cache = tmp_path / "cache"
    backend = ScriptedBackend([summarize] * 400)
    with use_llm(monkeypatch, backend), open_memory(target, embedder, cache, llm=True) as m:
        m.add_many(turns(secret))
        m.build(recipe="deep")
        old = m.get(["t2"])[0]
        m.update("t2", "Tomatoes grow slowly.")
        m.build(recipe="deep")
        assert [v.text for v in m.history("t2")] == [old.text]
        assert vector_of(m.store, embedder, f"Ana: {old.text}")
        assert scan(folders(target, tmp_path), secret)

        assert m.delete(["t2"]) == 1

        assert not vector_of(m.store, embedder, f"Ana: {old.text}")
        settle(m, target)
        assert scan(folders(target, tmp_path), secret) == []


def test_a_delete_while_the_worker_holds_the_turn_leaves_nothing(
    store_at: Callable[[str], str],
    tmp_path: Path,
    embedder: Any,
    monkeypatch: pytest.MonkeyPatch,
    secret: str,
) -> None:
    """Item 4: the queue worker has the turn in a batch, its model call in flight, when
    the turn is deleted. What the call brings back after the delete (the reply, the
    records made from it) is gone too once the worker's next run has repaired."""
    target = store_at("m")
    cache = tmp_path / "cache"
    held, release = threading.Event(), threading.Event()

    def merge(messages: list[Message]) -> str:
        new = unfence(messages[-1].content).split("[New Information]")[-1]
        if secret in new and not held.is_set():
            held.set()
            assert release.wait(120)
        return summarize(messages)

    settings = {"build.mode": "queue", "build.repair_wait_s": 0}
    backend = ScriptedBackend([merge] * 400)
    with (
        use_llm(monkeypatch, backend),
        open_memory(target, embedder, cache, llm=True, **settings) as m,
    ):
        m.add_many(turns(secret))
        with open_memory(target, embedder, cache, llm=True, **settings) as w:
            engine = w._inner.engine
            worker = threading.Thread(
                target=lambda: asyncio.run(run_worker(engine, "deep", once=True))
            )
            worker.start()
            try:
                assert held.wait(120)
                assert m.delete(["t2"]) == 1
            finally:
                release.set()
                worker.join(120)
            assert not worker.is_alive()
            asyncio.run(run_worker(engine, "deep", once=True))  # the worker's next run
            assert m.stats(NS)["namespaces"][0]["repairs"] == {}
        settle(m, target)
        assert scan(folders(target, tmp_path), secret) == []


def test_a_copied_store_loses_the_copied_vectors_of_a_deleted_turn(
    store_at: Callable[[str], str], tmp_path: Path, embedder: Any, secret: str
) -> None:
    """A copy does not carry what text a design's vector was made from: in the target,
    the first delete takes every copied vector no episode points to (a design embeds
    its texts again), so none made from the deleted turn is left."""
    recording = Recording(embedder)
    with open_memory(str(tmp_path / "a.db"), recording, tmp_path / "c", llm=False) as a:
        build_everything(a, secret)
        a.search(f"wifi password {secret}", k=3, recipe="mnemis")
        target = store_at("b")
        with open_memory(target, embedder, tmp_path / "c", llm=False) as b:
            names, _ = copying.plan(a.store, b.store, None)
            copying.copy_store(a.store, b.store, names)
            copied = [t for t in dict.fromkeys(recording.texts) if vector_of(b.store, embedder, t)]
            made = [t for t in copied if secret in t]
            assert len(made) > 2

            assert b.delete(["t2"]) == 1

            assert [t for t in made if vector_of(b.store, embedder, t)] == []
            hits = b.search("Grandma Odile apricot tart", k=3, recipe="mnemis").hits
            assert "t5" in {s for h in hits for s in h.sources}
