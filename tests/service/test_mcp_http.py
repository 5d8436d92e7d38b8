"""MCP over streamable HTTP at /mcp of the served app, through the SDK's own client, with
the service's API keys: a key reaches only its namespaces and scope, and no key (once
keys are in use) is refused before the MCP session starts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memstrata.llm.fence import unfence
from memstrata.service import keys
from memstrata.store import open_store
from waiting import until_async


def _url(client: httpx.Client) -> str:
    return str(client.base_url).rstrip("/").removesuffix("/v1") + "/mcp/"


def _client(url: str, key: str | None) -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers)))


async def _call(url: str, key: str | None, tool: str, args: dict[str, Any]) -> Any:
    async with _client(url, key) as client:
        return await client.call_tool(tool, args)


def test_mcp_over_http_with_keys(served: tuple[httpx.Client, Path]) -> None:
    rest, db = served
    url = _url(rest)
    # open mode (no key yet): a session works without one
    added = asyncio.run(
        _call(
            url, None, "add_memory", {"text": "Zoltan hides the key.", "namespace": "b", "id": "b1"}
        )
    )
    assert not added.is_error
    store = open_store(db)
    try:
        write_a = keys.make_key(store, ["a"], "write")[0]
        read_a = keys.make_key(store, ["a"], "read")[0]
    finally:
        store.close()

    async def session() -> None:
        async with _client(url, write_a) as client:
            done = await client.call_tool(
                "add_memory",
                {"text": "Maya keeps the passport in the drawer.", "namespace": "a", "id": "a1"},
            )
            assert not done.is_error
            found = await client.call_tool("search_memory", {"query": "passport", "namespace": "a"})
            hit = found.structured_content["hits"][0]
            assert hit["sources"] == ["a1"] and "passport" in unfence(hit["text"])
            other = await client.call_tool("search_memory", {"query": "key", "namespace": "b"})
            assert other.is_error and "unknown namespace 'b'" in other.content[0].text
            assert "Zoltan" not in str(other)
        async with _client(url, read_a) as client:
            denied = await client.call_tool("delete_memory", {"ids": ["a1"], "namespace": "a"})
            assert denied.is_error and "scope" in denied.content[0].text

    asyncio.run(session())
    try:  # no key: the transport is refused before any MCP message
        asyncio.run(_call(url, None, "search_memory", {"query": "key", "namespace": "b"}))
    except Exception:  # the SDK raises an exception group around the HTTP error
        pass
    else:
        pytest.fail("an MCP session without a key was accepted")
    refused = httpx.post(url, json={}, headers={"Accept": "application/json"})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"


def test_a_session_over_http_follows_its_jobs(tmp_path: Path) -> None:
    """add, search, ask, update, show and job_status over /mcp, on a recipe that builds in
    the background: the job an add returns ends succeeded, and shows what was built."""
    from service_helpers import serving

    from memstrata.config import Config

    config = Config.load(
        store=str(tmp_path / "m.db"),
        **{"build.mode": "queue", "build.poll_s": 0.05, "recipe": "mnemis"},
    )

    async def wait(client: Client, job_id: str) -> dict[str, Any]:
        async def ended() -> dict[str, Any] | None:
            job = (await client.call_tool("job_status", {"job_id": job_id})).structured_content
            return dict(job) if job["state"] in ("succeeded", "failed", "removed") else None

        return await until_async(ended, f"job {job_id} ended", every=0.05)

    with serving(config) as rest:
        url = _url(rest)

        async def session() -> None:
            async with _client(url, None) as client:
                texts = ["Maya booked flights to Lisbon.", "Maya adopted a cat named Pepper."]
                jobs = []
                for i, text in enumerate(texts):
                    added = await client.call_tool("add_memory", {"text": text, "id": f"m{i}"})
                    assert not added.is_error and added.structured_content["added"] == [f"m{i}"]
                    jobs.append(added.structured_content["job"]["id"])
                found = await client.call_tool("search_memory", {"query": "Pepper the cat"})
                assert "m1" in {s for h in found.structured_content["hits"] for s in h["sources"]}
                for job_id in jobs:
                    job = await wait(client, job_id)
                    assert (job["state"], job["done"], job["steps"]) == ("succeeded", 1, 1)
                shown = await client.call_tool("show_structure", {"name": "Pepper"})
                assert not shown.is_error and shown.structured_content["nodes"]
                answer = await client.call_tool("ask_memory", {"question": "Where did Maya fly?"})
                assert not answer.is_error
                changed = await client.call_tool(
                    "update_memory", {"id": "m0", "text": "Maya booked flights to Porto."}
                )
                job = await wait(client, changed.structured_content["job"]["id"])
                assert (job["kind"], job["state"]) == ("update", "succeeded")
                gone = await client.call_tool("delete_memory", {"ids": ["m0"]})
                assert gone.structured_content == {"deleted": 1, "missing": []}
                removed = await client.call_tool("job_status", {"job_id": jobs[0]})
                assert removed.structured_content["state"] == "removed"

        asyncio.run(session())


def test_caps_cursors_and_deleting_a_namespace(served: tuple[httpx.Client, Path]) -> None:
    """search_memory takes the k REST takes (at most MAX_K), a list cursor that is not
    one the server gave is a clear tool error, and delete_namespace needs write scope and
    the namespace's name."""
    from memstrata.service.limits import MAX_K

    rest, db = served
    url = _url(rest)
    added = rest.post(
        "/namespaces/a/episodes",
        json={"episodes": [{"id": f"a{i}", "text": f"note {i}"} for i in range(3)]},
    )
    assert added.status_code == 200
    store = open_store(db)
    try:
        write_a = keys.make_key(store, ["a"], "write")[0]
        read_a = keys.make_key(store, ["a"], "read")[0]
    finally:
        store.close()

    async def session() -> None:
        async with _client(url, read_a) as client:
            ok = await client.call_tool(
                "search_memory", {"query": "note", "namespace": "a", "k": MAX_K}
            )
            assert not ok.is_error
            for k in (MAX_K + 1, 2**70, 0):
                over = await client.call_tool(
                    "search_memory", {"query": "note", "namespace": "a", "k": k}
                )
                assert over.is_error and "k" in over.content[0].text, k
            over_rest = rest.post(
                "/namespaces/a/search",
                json={"query": "n", "k": MAX_K + 1},
                headers={"Authorization": f"Bearer {read_a}"},
            )
            assert over_rest.status_code == 422  # the same cap over REST
            page = await client.call_tool("list_memories", {"namespace": "a", "limit": 2})
            cursor = page.structured_content["next"]
            assert [m["id"] for m in page.structured_content["memories"]] == ["a0", "a1"]
            for bad in ["9223372036854775808", cursor[:-1] + "!", "0"]:
                refused = await client.call_tool("list_memories", {"namespace": "a", "after": bad})
                assert refused.is_error and "cursor" in refused.content[0].text, bad
            denied = await client.call_tool("delete_namespace", {"namespace": "a"})
            assert denied.is_error and "scope" in denied.content[0].text
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["delete_namespace"].input_schema["required"] == ["namespace"]
        async with _client(url, write_a) as client:
            other = await client.call_tool("delete_namespace", {"namespace": "b"})
            assert other.is_error and "unknown namespace 'b'" in other.content[0].text
            gone = await client.call_tool("delete_namespace", {"namespace": "a"})
            assert gone.structured_content == {"deleted": 3}
        mine = rest.get("/namespaces", headers={"Authorization": f"Bearer {write_a}"})
        assert mine.json()["namespaces"] == []

    asyncio.run(session())
