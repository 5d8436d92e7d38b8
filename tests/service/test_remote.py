"""RemoteMemory: the verbs of Memory against a served store, the same return types and
the same exceptions; code moves to the service by changing the line that opens it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from memstrata import AsyncRemoteMemory, RemoteMemory
from memstrata.engine import Answer
from memstrata.errors import ConflictError, InvalidInputError, NamespaceNotFoundError
from memstrata.models import Episode, SearchResult
from memstrata.service import keys
from memstrata.store import AddReport, open_store


def _root(client: httpx.Client) -> str:
    return str(client.base_url).rstrip("/").removesuffix("/v1")


def test_the_verbs_of_memory_over_the_service(served: tuple[httpx.Client, Path]) -> None:
    rest, _ = served
    with RemoteMemory(_root(rest), namespace="me") as memory:
        assert memory.add("Maya booked flights to Lisbon.", id="t1", speaker="Maya").id == "t1"
        report = memory.add_many(
            ["Tomas adopted Pepper.", {"id": "t3", "text": "Maya flies in June."}]
        )
        assert isinstance(report, AddReport) and len(report.added) == 2
        with pytest.raises(ConflictError):
            memory.add("Maya booked a train.", id="t1")
        result = memory.search("Lisbon flights", k=3)
        assert isinstance(result, SearchResult) and result.hits[0].sources == ["t1"]
        answer = memory.ask("Where is Maya flying?")
        assert isinstance(answer, Answer)
        (got,) = memory.get(["t1", "absent"])
        assert isinstance(got, Episode) and got.text == "Maya booked flights to Lisbon."
        memory.update("t1", "Maya booked flights to Porto.")
        assert [v.text for v in memory.history("t1")] == ["Maya booked flights to Lisbon."]
        gone = memory.delete(["t3", "nope"])
        assert gone == 1 and gone.missing == ["nope"]
        assert memory.namespaces() == ["me"]
        assert memory.stats()["namespaces"][0]["episodes"] == 2
        with pytest.raises(NamespaceNotFoundError) as info:
            memory.search("x", namespace="a b%c")
        assert info.value.namespace == "a b%c"
        odd = "team/a b?c#d%2F"  # every character that means something in a URL
        assert memory.add("Odd names travel whole.", id="x/1?", namespace=odd).id == "x/1?"
        assert memory.namespaces() == ["me", odd]
        assert [e.id for e in memory.get(["x/1?"], namespace=odd)] == ["x/1?"]
        assert memory.delete(["x/1?", "y%2F"], namespace=odd).missing == ["y%2F"]
        with pytest.raises(InvalidInputError):
            memory.add("   ")


def test_the_async_client_and_keys(served: tuple[httpx.Client, Path]) -> None:
    rest, db = served
    store = open_store(db)
    try:
        key = keys.make_key(store, ["team"], "write")[0]
    finally:
        store.close()

    async def session() -> None:
        async with AsyncRemoteMemory(_root(rest), key, namespace="team") as memory:
            await memory.add("The deploy is on Friday.", id="d1")
            assert (await memory.search("deploy day")).hits[0].sources == ["d1"]
            with pytest.raises(NamespaceNotFoundError):
                await memory.search("deploy", namespace="other")
        async with AsyncRemoteMemory(_root(rest), "msk_wrong") as memory:
            with pytest.raises(keys.Unauthorized):
                await memory.namespaces()

    asyncio.run(session())


def test_an_unreachable_service_is_a_store_error() -> None:
    from memstrata.errors import StoreError
    from memstrata.eval.bench_serve import free_port

    with (
        RemoteMemory(f"http://127.0.0.1:{free_port()}", timeout=5) as memory,
        pytest.raises(StoreError, match="cannot reach the service"),
    ):
        memory.search("anything")
