"""Updating episodes through the API: conflicts on re-add, ``update`` and ``history``,
delete reports, re-derived structures, atomicity under failure and a kill, two writers.

Real SQLite files and the real MiniLM throughout; the API is ``AsyncMemory`` (``Memory``
only for the verbs it has).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstrata.embed.base import Embedder, Vectors
from memstrata.errors import (
    ConflictError,
    InvalidInputError,
    MemstrataError,
    NamespaceNotFoundError,
)
from memstrata.memory import AsyncMemory, Memory
from memstrata.retrieval import documents

CHAT = [
    ("t1", "ana", "s1", "I adopted a greyhound called Pepper from the shelter."),
    ("t2", "ben", "s1", "My sister is learning to play the cello."),
    ("t3", "ana", "s1", "We grew tomatoes and basil on the balcony this summer."),
    ("t4", "ben", "s2", "The night train to Vienna was delayed by two hours."),
    ("t5", "ana", "s2", "I baked sourdough bread with a crunchy crust."),
    ("t6", "ben", "s2", "The chess tournament ended in a surprising draw."),
]
OLD = CHAT[0][3]
NEW = "The plumber fixed the leaking kitchen tap on Monday morning."


def items() -> list[dict[str, Any]]:
    return [{"id": i, "speaker": s, "session": ses, "text": t} for i, s, ses, t in CHAT]


def run(
    tmp_path: Path, embedder: Embedder, body: Callable[[AsyncMemory], Awaitable[None]], **kw: Any
) -> None:
    async def main() -> None:
        async with AsyncMemory.open(tmp_path / "m.db", embedder=embedder, **kw) as m:
            await body(m)

    asyncio.run(main())


def dense_score(m: AsyncMemory, text: str, eid: str, namespace: str = "default") -> float:
    """Cosine, in the store's vector index, of episode ``eid`` to ``text`` as said by its
    speaker (what the embedder saw of it): about 1.0 for the stored text, -inf if absent."""
    (ep,) = m.store.get_episodes(namespace, [eid])
    query = m.embedder.embed([documents.embed_text(text, ep.speaker, {})])
    hits = m.store.dense_episodes(namespace, m.embedder.model_id, query, 100)
    return dict(hits[0]).get(ep.key, float("-inf"))


# conflicts on re-add ----------------------------------------------------------------------
def test_re_adding_the_same_content_is_a_no_op_and_other_content_a_conflict(
    tmp_path: Path, embedder
) -> None:
    async def body(m: AsyncMemory) -> None:
        first = await m.add(OLD, id="t1", speaker="ana", metadata={"a": 1, "b": 2})
        again = await m.add(OLD, id="t1", speaker="ana", metadata={"b": 2, "a": 1})
        assert again == first and await m.history("t1") == []
        for other in (dict(speaker="ana", text=NEW), dict(speaker="bo", text=OLD)):
            with pytest.raises(ConflictError) as caught:
                await m.add(other["text"], id="t1", speaker=other["speaker"])
            assert isinstance(caught.value, InvalidInputError)
            assert caught.value.ids == ["t1"] and caught.value.namespace == "default"
            message = str(caught.value)
            assert "'t1'" in message and "update(" in message and "replace=True" in message
        assert await m.get(["t1"]) == [first] and await m.history("t1") == []

        replaced = await m.add(NEW, id="t1", speaker="ana", replace=True)
        assert replaced.text == NEW and replaced.key == first.key
        (old,) = await m.history("t1")
        assert (old.version, old.text, old.metadata) == (1, OLD, {"a": 1, "b": 2})

    run(tmp_path, embedder, body)


def test_add_many_reports_conflicts_per_id_and_replaces_on_request(
    tmp_path: Path, embedder
) -> None:
    async def body(m: AsyncMemory) -> None:
        await m.add_many(items())
        batch = items()
        batch[0]["text"] = NEW  # t1 changed
        batch[3]["session"] = "s9"  # t4: same text, other session
        batch.append({"id": "t7", "text": "A brand new turn."})
        report = await m.add_many(batch, batch_size=4)
        assert report.added == ["t7"]
        assert sorted(report.existing) == ["t2", "t3", "t5", "t6"]
        assert sorted(report.conflicts) == ["t1", "t4"] and report.updated == []
        assert (await m.get(["t1"]))[0].text == OLD

        again = await m.add_many(batch, batch_size=4, replace=True)
        assert sorted(again.updated) == ["t1", "t4"] and again.conflicts == []
        assert sorted(again.existing) == ["t2", "t3", "t5", "t6", "t7"] and again.added == []
        t1, t4 = await m.get(["t1", "t4"])
        assert (t1.text, t4.session) == (NEW, "s9")
        assert [v.session for v in await m.history("t4")] == ["s2"]
        rerun = await m.add_many(batch, replace=True)  # idempotent once replaced
        assert rerun.updated == [] and len(rerun.existing) == len(batch)

        # one id twice in a batch: the later item replaces the earlier, in order
        dup = [{"id": "d", "text": "first draft"}, {"id": "d", "text": "second draft"}]
        assert (await m.add_many(dup)).conflicts == ["d"]
        assert (await m.get(["d"]))[0].text == "first draft"
        dup.append({"id": "d", "text": "third draft"})
        report = await m.add_many(dup, replace=True)
        assert report.updated == ["d", "d"] and report.existing == ["d"]
        assert [v.text for v in await m.history("d")] == ["first draft", "second draft"]
        assert (await m.get(["d"]))[0].text == "third draft"

    run(tmp_path, embedder, body)


# update and history -----------------------------------------------------------------------
def test_after_an_update_search_sees_only_the_new_version(tmp_path: Path, embedder) -> None:
    async def body(m: AsyncMemory) -> None:
        await m.add_many(items())
        before = (await m.search("the greyhound called Pepper", k=1)).hits[0]  # indexes loaded
        assert before.id == "t1" and set(before.routes) == {"dense", "bm25"}
        assert dense_score(m, OLD, "t1") > 0.9

        ep = await m.update("t1", NEW)
        assert (ep.text, ep.speaker, ep.session) == (NEW, "ana", "s1")  # context kept

        # BM25: terms only in the old text find nothing, terms of the new text find it
        assert m.store.bm25_episodes("default", ["greyhound", "pepper", "shelter"], 10) == []
        assert [k for k, _ in m.store.bm25_episodes("default", ["plumber"], 10)] == [ep.key]
        # dense: the old text is no longer near the episode, the new one is
        assert dense_score(m, OLD, "t1") < 0.5 < dense_score(m, NEW, "t1")
        # (with six episodes every one is a dense candidate; what counts is the score)
        found = {h.id: h for h in (await m.search("the greyhound called Pepper", k=6)).hits}
        assert found["t1"].routes == ["dense"]
        new_hit = (await m.search("who fixed the leaking tap in the kitchen?", k=1)).hits[0]
        assert new_hit.id == "t1" and set(new_hit.routes) == {"dense", "bm25"}
        assert NEW in new_hit.text and OLD not in new_hit.text
        assert (await m.get(["t1"]))[0].text == NEW
        (v1,) = await m.history("t1")
        assert (v1.text, v1.speaker, v1.session, v1.version) == (OLD, "ana", "s1", 1)

    run(tmp_path, embedder, body)


def test_update_keeps_omitted_fields_clears_none_and_checks_its_input(
    tmp_path: Path, embedder
) -> None:
    async def body(m: AsyncMemory) -> None:
        first = await m.add(
            OLD,
            id="e",
            speaker="ana",
            role="user",
            session="s1",
            occurred_at="2024-03-02T10:00:00Z",
            metadata={"mood": "glad"},
        )
        ep = await m.update("e", NEW, session=None, metadata={"fixed": True})
        assert (ep.speaker, ep.role, ep.session) == ("ana", "user", None)
        assert ep.occurred_at == first.occurred_at and ep.metadata == {"fixed": True}
        ep = await m.update("e", NEW.encode(), occurred_at="2024-03-03T09:00:00+00:00")
        assert ep.occurred_at is not None and ep.occurred_at.day == 3
        assert len(await m.history("e")) == 2
        same = await m.update("e", NEW)  # same content: no new version
        assert same == ep and len(await m.history("e")) == 2

        with pytest.raises(InvalidInputError, match="no episode 'nope' in namespace 'default'"):
            await m.update("nope", "text")
        with pytest.raises(InvalidInputError, match="empty text"):
            await m.update("e", "   ")
        with pytest.raises(InvalidInputError, match="not valid UTF-8"):
            await m.update("e", b"caf\xe9")
        with pytest.raises(InvalidInputError, match="no episode 'nope'"):
            await m.history("nope")
        with pytest.raises(NamespaceNotFoundError):
            await m.update("e", "text", namespace="ghost")
        with pytest.raises(NamespaceNotFoundError):
            await m.history("e", namespace="ghost")
        assert (await m.get(["e"]))[0] == ep and await m.get(["nope"]) == []

    run(tmp_path, embedder, body)


def test_sync_facade_update_and_history(tmp_path: Path, embedder) -> None:
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        m.add(OLD, id="t1")
        assert m.update("t1", NEW).text == NEW
        assert [v.text for v in m.history("t1")] == [OLD]


def test_update_rebuilds_structures_along_provenance(tmp_path: Path, embedder) -> None:
    """mnemis, inline: an entity named only in the old text goes, one of the new appears,
    and search (mnemis route) reads the new graph."""
    old = "I spent two weeks in Zanzibar with Priya last spring."
    new = "I spent two weeks in Reykjavik with Priya last spring."

    async def body(m: AsyncMemory) -> None:
        await m.add_many(items())
        await m.add(old, id="trip", speaker="ana", session="s3")

        def names() -> set[str]:
            return {r.name for r in m.store.get_records("default", "entity", builder=None)}  # type: ignore[attr-defined]

        assert {"Zanzibar", "Priya"} <= names() and "Reykjavik" not in names()
        await m.update("trip", new)
        assert "Reykjavik" in names() and "Priya" in names() and "Zanzibar" not in names()
        for kind in ("entity", "fact", "category"):
            for rec in m.store.get_records("default", kind, builder=None):
                assert all(old not in s.episode for s in rec.sources)
        stats = await m.stats("default")
        assert stats["namespaces"][0]["builds"]["mnemis"]["queued"] == 0
        assert stats["namespaces"][0]["failures"] == []
        res = await m.search("Where did Ana spend two weeks?", k=5)
        texts = " ".join(h.text for h in res.hits)
        assert "Reykjavik" in texts and "Zanzibar" not in texts and res.pending == 0

    run(tmp_path, embedder, body, recipe="mnemis")


def test_update_queues_the_episode_again_outside_inline_mode(tmp_path: Path, embedder) -> None:
    async def body(m: AsyncMemory) -> None:
        await m.add_many(items())
        await m.build()
        assert (await m.search("greyhound", k=1)).pending == 0
        await m.update("t1", NEW)
        assert (await m.search("plumber", k=1)).pending == 1  # only the updated episode
        (report,) = await m.build()
        assert report.episodes == 1 and (await m.search("plumber", k=1)).pending == 0

    run(tmp_path, embedder, body, recipe="mnemis", **{"build.mode": "manual"})


# deleting ---------------------------------------------------------------------------------
def test_delete_returns_the_count_and_names_missing_ids(tmp_path: Path, embedder) -> None:
    async def body(m: AsyncMemory) -> None:
        await m.add_many(items())
        report = await m.delete(["t1", "nope", "t2", "gone"])
        assert report == 2 and report.missing == ["nope", "gone"]
        assert (await m.delete(["t1"])).missing == ["t1"]
        assert await m.delete_namespace("default") == len(CHAT) - 2

    run(tmp_path, embedder, body)


# atomicity --------------------------------------------------------------------------------
class FailingEmbedder(Embedder):
    """The real embedder, except that texts containing ``trigger`` make it raise."""

    def __init__(self, inner: Embedder, trigger: str) -> None:
        self.inner, self.trigger = inner, trigger
        self.model_id, self.dim = inner.model_id, inner.dim

    def embed(self, texts: list[str]) -> Vectors:
        if any(self.trigger in t for t in texts):
            raise MemstrataError("embedding backend unavailable")
        return self.inner.embed(texts)


def test_an_embedder_failure_leaves_the_old_version_intact(tmp_path: Path, embedder) -> None:
    async def body(m: AsyncMemory) -> None:
        await m.add_many(items())
        with pytest.raises(MemstrataError, match="embedding backend unavailable"):
            await m.update("t1", NEW)
        with pytest.raises(MemstrataError, match="embedding backend unavailable"):
            await m.add_many([{"id": "t1", "text": NEW}], replace=True)
        assert (await m.get(["t1"]))[0].text == OLD and await m.history("t1") == []
        assert m.store.bm25_episodes("default", ["plumber"], 5) == []
        assert (await m.search("greyhound called Pepper", k=1)).hits[0].id == "t1"
        assert dense_score(m, OLD, "t1") > 0.9

    async def main() -> None:
        failing = FailingEmbedder(embedder, "plumber")
        async with AsyncMemory.open(tmp_path / "m.db", embedder=failing) as m:
            await body(m)

    asyncio.run(main())


def test_add_many_embeds_ahead_but_commits_in_order(tmp_path: Path, embedder) -> None:
    """Batches are embedded ahead of their writes: an embedding failure in batch 3 leaves
    batches 1 and 2 stored and nothing of 3 and 4; a second import embeds nothing that
    is stored with the same content, and stores the rest."""
    lines = [
        {"id": f"n{i}", "text": f"Note {i}: the heron came back to pond {i}."} for i in range(16)
    ]
    lines[9]["text"] = "Note 9: the plumber came back."

    class Counting(FailingEmbedder):
        texts: list[str] = []

        def embed(self, texts: list[str]) -> Vectors:
            self.texts.extend(texts)
            return super().embed(texts)

    async def main() -> None:
        failing = Counting(embedder, "plumber")
        async with AsyncMemory.open(tmp_path / "m.db", embedder=failing) as m:
            with pytest.raises(MemstrataError, match="embedding backend unavailable"):
                await m.add_many(lines, batch_size=4)
            stored = sorted(e.id for e in await m.get([f"n{i}" for i in range(16)]))
            assert stored == sorted(f"n{i}" for i in range(8))
            failing.trigger = "no such text"
            failing.texts.clear()
            report = await m.add_many(lines, batch_size=4)
            assert sorted(report.existing) == stored and len(report.added) == 8
            # the eight stored are not embedded again; batch 4 may have been embedded
            # ahead (into the cache) before batch 3 failed, so it may not be either
            assert not any(e.text in failing.texts for e in await m.get(stored))
            assert "Note 9: the plumber came back." in failing.texts

    asyncio.run(main())


KILLED_UPDATE = """
import os, sys
from memstrata.embed import MiniLMEmbedder
from memstrata.memory import Memory
from memstrata.store.sqlite import SQLiteStore

def die(self, *args):  # inside the update's transaction, after the episode row,
    os._exit(9)                  # its FTS row and the history row were written

SQLiteStore._follow_provenance = die
with Memory.open(sys.argv[1], embedder=MiniLMEmbedder(workers=1)) as m:
    m.update("t1", sys.argv[2])
"""


@pytest.mark.slow
def test_a_process_killed_inside_an_update_leaves_the_old_version(
    tmp_path: Path, embedder, subprocess_env: dict[str, str]
) -> None:
    path = tmp_path / "m.db"
    with Memory.open(path, embedder=embedder) as m:
        m.add_many(items())
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_UPDATE, str(path), NEW],
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 9, proc.stderr

    async def body(m: AsyncMemory) -> None:
        assert (await m.get(["t1"]))[0].text == OLD and await m.history("t1") == []
        assert m.store.bm25_episodes("default", ["plumber"], 5) == []
        assert [h.id for h in (await m.search("greyhound Pepper", k=1)).hits] == ["t1"]
        assert dense_score(m, OLD, "t1") > 0.9
        await m.update("t1", NEW)  # and the store takes the update afterwards
        assert [v.text for v in await m.history("t1")] == [OLD]

    run(tmp_path, embedder, body)


WRITER = """
import sys
from memstrata.embed import MiniLMEmbedder
from memstrata.memory import Memory
path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
emb = MiniLMEmbedder(workers=1)
with Memory.open(path, embedder=emb) as m:
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(n):
        m.update("t1", f"{tag} rewrote the first turn, take {i}")
print("done", flush=True)
"""


@pytest.mark.slow
def test_two_processes_updating_one_id_lose_no_version(
    tmp_path: Path, embedder, subprocess_env: dict[str, str]
) -> None:
    path = tmp_path / "m.db"
    with Memory.open(path, embedder=embedder) as m:
        m.add_many(items())
    n = 6
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), tag, str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env,
        )
        for tag in ("left", "right")
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (out, err) in zip(procs, results, strict=True):
        assert p.returncode == 0 and out.strip() == "done", err

    async def body(m: AsyncMemory) -> None:
        history = await m.history("t1")
        (current,) = await m.get(["t1"])
        written = [v.text for v in history] + [current.text]
        expected = {
            f"{t} rewrote the first turn, take {i}" for t in ("left", "right") for i in range(n)
        }
        assert [v.version for v in history] == list(range(1, 2 * n + 1))
        assert written[0] == OLD and set(written[1:]) == expected  # every write, once
        for tag in ("left", "right"):  # each writer's versions in its own order
            mine = [t for t in written if t.startswith(tag)]
            assert mine == sorted(mine, key=lambda t: int(t.rsplit(" ", 1)[1]))
        assert [h.id for h in (await m.search(current.text, k=1)).hits] == ["t1"]
        assert dense_score(m, current.text, "t1") > 0.9
        assert len(m.store.bm25_episodes("default", ["rewrote"], 10)) == 1

    run(tmp_path, embedder, body)


def test_vectors_of_an_updated_episode_come_from_the_new_text(tmp_path: Path, embedder) -> None:
    """The stored vector is the embedder's for the new text (float16), nothing stale."""

    async def body(m: AsyncMemory) -> None:
        await m.add_many(items())
        await m.update("t1", NEW)
        expected = embedder.embed([f"ana: {NEW}"])[0]
        (key,) = [e.key for e in await m.get(["t1"])]
        hits = m.store.dense_episodes("default", embedder.model_id, expected[None, :], 1)
        assert hits[0][0][0] == key and hits[0][0][1] == pytest.approx(1.0, abs=1e-3)
        assert np.isfinite(hits[0][0][1])

    run(tmp_path, embedder, body)
