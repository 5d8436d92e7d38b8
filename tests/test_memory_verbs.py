"""The verbs that take ids, delete and list, in ``Memory`` and ``AsyncMemory``, on SQLite and
PostgreSQL: a bare string is one id, ``delete`` needs ids (a namespace goes by
``delete_namespace``), and ``list`` pages episodes behind an opaque cursor."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from memstrata import AsyncMemory, Memory
from memstrata.errors import InvalidInputError, NamespaceNotFoundError
from memstrata.store import SearchFilters

IDS = ["1", "2", "3", "12"]


def _ids(episodes: list) -> list[str]:
    return [e.id for e in episodes]


def test_a_bare_string_is_one_id(store_at: Callable[[str], str], embedder) -> None:
    with Memory.open(store_at("m"), embedder=embedder) as m:
        m.add_many([{"id": i, "text": f"turn number {i}"} for i in IDS], namespace="x")
        assert _ids(m.get("12", namespace="x")) == ["12"]
        assert m.get("c16", namespace="x") == []
        assert _ids(m.get(("3", "1"), namespace="x")) == ["3", "1"]
        assert _ids(m.get(i for i in ["2", "12"])) == []  # another namespace: nothing
        with pytest.raises(TypeError, match="episode id is a string"):
            m.get(["1", 2], namespace="x")  # type: ignore[list-item]
        with pytest.raises(TypeError, match="episode id is a string"):
            m.delete([b"1"], namespace="x")  # type: ignore[list-item]
        with pytest.raises(TypeError, match="one id"):
            m.get(b"12", namespace="x")  # type: ignore[arg-type]
        assert m.history("1", namespace="x") == []
        with pytest.raises(TypeError, match="episode id is a string"):
            m.history(1, namespace="x")  # type: ignore[arg-type]
        report = m.delete("12", namespace="x")
        assert report == 1 and report.missing == []
        assert _ids(m.list(namespace="x").episodes) == ["1", "2", "3"]  # "1" and "2" stay
        gone = m.delete("c16", namespace="x")
        assert gone == 0 and gone.missing == ["c16"]


def test_delete_needs_ids_and_a_namespace_has_its_own_verb(
    store_at: Callable[[str], str], embedder
) -> None:
    with Memory.open(store_at("m"), embedder=embedder) as m:
        m.add_many([{"id": i, "text": f"turn number {i}"} for i in IDS], namespace="x")
        m.add("Elsewhere.", id="e", namespace="y")
        with pytest.raises(TypeError):
            m.delete(namespace="x")  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="delete_namespace"):
            m.delete(None, namespace="x")  # type: ignore[arg-type]
        assert _ids(m.list(namespace="x").episodes) == IDS  # nothing was deleted
        assert m.delete([], namespace="x") == 0
        assert m.delete_namespace("x") == 4
        assert m.namespaces() == ["y"]
        with pytest.raises(NamespaceNotFoundError):
            m.delete_namespace("x")
        with pytest.raises(InvalidInputError):
            m.delete_namespace("")


def test_the_async_core_reads_ids_the_same_way(store_at: Callable[[str], str], embedder) -> None:
    async def main() -> None:
        async with AsyncMemory.open(store_at("a"), embedder=embedder) as m:
            await m.add_many([{"id": i, "text": f"turn number {i}"} for i in IDS])
            assert _ids(await m.get("12")) == ["12"]
            assert (await m.delete("2")) == 1
            with pytest.raises(TypeError, match="delete_namespace"):
                await m.delete(None)  # type: ignore[arg-type]
            assert _ids((await m.list()).episodes) == ["1", "3", "12"]
            assert await m.delete_namespace("default") == 3
            assert await m.namespaces() == []

    asyncio.run(main())


def test_list_pages_in_insertion_order_behind_an_opaque_cursor(
    store_at: Callable[[str], str], embedder
) -> None:
    turns = [
        {"id": f"e{i}", "text": f"turn {i}", "speaker": "Ana" if i % 2 else "Rui"}
        | ({"occurred_at": f"2024-05-{i + 1:02d}T10:00:00+00:00"} if i < 6 else {})
        for i in range(9)
    ]
    from memstrata import EpisodePage

    with Memory.open(store_at("m"), embedder=embedder) as m:
        m.add_many(turns[:4], namespace="ns")
        m.add_many([{"id": f"o{i}", "text": f"other {i}"} for i in range(50)], namespace="other")
        m.add_many(turns[4:], namespace="ns")
        seen: list[str] = []
        cursors: list[str] = []
        page = m.list(namespace="ns", limit=4)
        while True:
            assert isinstance(page, EpisodePage) and len(page.episodes) <= 4
            seen += _ids(page.episodes)
            if page.next is None:
                break
            cursors.append(page.next)
            page = m.list(namespace="ns", limit=4, after=page.next)
        assert seen == [f"e{i}" for i in range(9)]
        # the cursor says nothing of the store-wide position (50 writes of another
        # namespace sit between e3 and e4): same length, no readable number, and the same
        # position twice gives two different cursors
        assert len(cursors) == 2 and len(set(map(len, cursors))) == 1
        again = m.list(namespace="ns", limit=4).next
        assert again is not None and again != cursors[0]
        assert _ids(m.list(namespace="ns", limit=4, after=again).episodes) == _ids(
            m.list(namespace="ns", limit=4, after=cursors[0]).episodes
        )
        ana = m.list(namespace="ns", limit=2, filters=SearchFilters(speakers=["Ana"]))
        assert _ids(ana.episodes) == ["e1", "e3"] and ana.next is not None
        rest = m.list(namespace="ns", after=ana.next, filters=SearchFilters(speakers=["Ana"]))
        assert _ids(rest.episodes) == ["e5", "e7"] and rest.next is None
        window = SearchFilters(since="2024-05-02T00:00:00Z", until="2024-05-04T23:00:00Z")
        assert _ids(m.list(namespace="ns", filters=window).episodes) == ["e1", "e2", "e3"]
        # a cursor is good for its namespace only, and a tampered or made-up one is refused
        for bad in [cursors[0][:-2] + ("AA" if cursors[0][-2:] != "AA" else "BB"), "5", "", "x"]:
            with pytest.raises(InvalidInputError, match="cursor"):
                m.list(namespace="ns", after=bad)
        m.add("Third.", id="t", namespace="third")
        with pytest.raises(InvalidInputError, match="cursor"):
            m.list(namespace="third", after=cursors[0])
        for limit in (0, -1, 100_000):
            with pytest.raises(InvalidInputError, match="limit"):
                m.list(namespace="ns", limit=limit)
        with pytest.raises(NamespaceNotFoundError):
            m.list(namespace="nobody")
