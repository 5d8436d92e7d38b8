"""The service's clients have the verbs of ``Memory`` and read them the same way, against a
real server on a loopback port over SQLite and PostgreSQL: a bare string is one id,
``delete`` needs ids and ``delete_namespace`` names its namespace, ``list`` pages behind
an opaque cursor, ``add`` returns the stored episode, ``update`` takes the context
fields, ``search_many`` and the reading options go over the wire."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest
from service_helpers import serving

import memstrata
from memstrata import AsyncRemoteMemory, RemoteMemory
from memstrata.config import Config
from memstrata.errors import InvalidInputError, NamespaceNotFoundError
from memstrata.models import Episode, SearchResult
from memstrata.store import SearchFilters

IDS = ["1", "2", "3", "12", "c19"]


@pytest.fixture
def root(store_at: Callable[[str], str]) -> Iterator[str]:
    """The URL of a server over a fresh store, once on each backend."""
    config = Config.load(store=store_at("served"), **{"build.mode": "queue", "build.poll_s": 0.05})
    with serving(config) as client:
        yield str(client.base_url).rstrip("/").removesuffix("/v1")


def _ids(episodes: list[Episode]) -> list[str]:
    return [e.id for e in episodes]


def test_ids_delete_and_namespaces_over_the_service(root: str) -> None:
    with RemoteMemory(root, namespace="x") as memory:
        memory.add_many([{"id": i, "text": f"turn number {i}"} for i in IDS])
        assert _ids(memory.get("12")) == ["12"]
        assert _ids(memory.get("c19")) == ["c19"]
        assert memory.get("c16") == []
        with pytest.raises(TypeError, match="episode id is a string"):
            memory.get(["1", 2])  # type: ignore[list-item]
        report = memory.delete("12")
        assert report == 1 and report.missing == []
        assert _ids(memory.list().episodes) == ["1", "2", "3", "c19"]
        with pytest.raises(TypeError):
            memory.delete()  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="delete_namespace"):
            memory.delete(None)  # type: ignore[arg-type]
        assert len(memory.list().episodes) == 4  # nothing was deleted
        many = [f"m{i}" for i in range(250)]  # more ids than one request carries
        memory.add_many(many, namespace="big", batch_size=100)
        assert memory.list(namespace="big", limit=1).next is not None
        assert memory.delete_namespace("x") == 4
        assert memory.namespaces() == ["big"]
        with pytest.raises(NamespaceNotFoundError):
            memory.delete_namespace("x")

    async def session() -> None:
        async with AsyncRemoteMemory(root, namespace="big") as memory:
            gone = await memory.delete(["nope", *(e.id for e in (await memory.list()).episodes)])
            assert gone == 100 and gone.missing == ["nope"]
            assert (await memory.list()).next is not None

    asyncio.run(session())


def test_list_pages_behind_an_opaque_cursor(root: str) -> None:
    from memstrata import EpisodePage

    with RemoteMemory(root, namespace="ns") as memory:
        memory.add_many(
            [
                {"id": f"e{i}", "text": f"turn {i}", "speaker": "Ana" if i % 2 else "Rui"}
                for i in range(7)
            ]
        )
        first = memory.list(limit=3)
        assert isinstance(first, EpisodePage) and _ids(first.episodes) == ["e0", "e1", "e2"]
        assert isinstance(first.next, str) and not first.next.isdigit()
        second = memory.list(limit=3, after=first.next)
        assert _ids(second.episodes) == ["e3", "e4", "e5"]
        assert all(e.key == 0 for e in first.episodes)  # the store's key stays inside
        ana = memory.list(filters=SearchFilters(speakers=["Ana"]))
        assert _ids(ana.episodes) == ["e1", "e3", "e5"] and ana.next is None
        with pytest.raises(InvalidInputError, match="cursor"):
            memory.list(after="9223372036854775808")
        with pytest.raises(InvalidInputError, match="cursor"):
            memory.list(after=first.next[:-1] + ("A" if first.next[-1] != "A" else "B"))


def test_the_verbs_return_what_memory_returns(root: str) -> None:
    with RemoteMemory(root, namespace="me") as memory:
        added = memory.add(
            b"Maya booked flights to Lisbon.", id="t1", speaker="Maya", at="2024-05-01T10:00:00"
        )
        assert isinstance(added, Episode)
        assert (added.id, added.text, added.speaker) == (
            "t1",
            "Maya booked flights to Lisbon.",
            "Maya",
        )
        assert added.occurred_at is not None and added.occurred_at.year == 2024
        memory.add("Tomas adopted Pepper.", id="t2", speaker="Tomas", session="s1")
        updated = memory.update("t2", "Tomas adopted a greyhound called Pepper.", role="user")
        assert (updated.speaker, updated.session, updated.role) == ("Tomas", "s1", "user")
        cleared = memory.update("t2", "Tomas adopted a greyhound called Pepper.", session=None)
        assert (cleared.speaker, cleared.session) == ("Tomas", None)
        versions = memory.history("t2")  # each change of context is a version too
        assert [(v.text, v.role) for v in versions] == [
            ("Tomas adopted Pepper.", None),
            ("Tomas adopted a greyhound called Pepper.", "user"),
        ]
        with pytest.raises(memstrata.NotFound):
            memory.history("nope")
        with pytest.raises(memstrata.NotFound):
            memory.update("nope", "text")
        results = memory.search_many(["Lisbon flights", "greyhound"], k=1)
        assert [type(r) for r in results] == [SearchResult, SearchResult]
        assert [r.hits[0].sources for r in results] == [["t1"], ["t2"]]
        unlimited = memory.search("Lisbon flights", k=2, max_tokens=None)
        tight = memory.search("Lisbon flights", k=2, max_tokens=8)
        assert tight.context_tokens <= 8 < unlimited.context_tokens
        assert len(memory.search("Lisbon flights", k=2, adaptive=True).hits) >= 1
        answer = memory.ask("Where is Maya flying?", k=2, max_tokens=200, adaptive=True)
        assert isinstance(answer.abstained, bool)
        assert "default" in {r["name"] for r in memory.recipes()}
        assert memory.retry(builder="nothing") == 0
        assert memory.build(rebuild=True) == []  # the default recipe builds nothing
        with pytest.raises(InvalidInputError, match="unknown key"):
            memory.add_many([{"text": "x", "colour": "red"}])


def test_an_update_that_drops_history_goes_over_the_service(root: str) -> None:
    """``keep_history=False`` reaches the service: the replaced version is not kept."""
    with RemoteMemory(root, namespace="h") as memory:
        memory.add("my old code is 4711", id="t1")
        memory.update("t1", "my code changed", keep_history=True)
        assert [v.text for v in memory.history("t1")] == ["my old code is 4711"]
        memory.update("t1", "my code changed again", keep_history=False)
        assert memory.history("t1") == []
        assert [e.text for e in memory.get("t1")] == ["my code changed again"]
