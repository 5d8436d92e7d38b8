"""What a served store's callers read of a search and an answer: over REST and over MCP
(streamable HTTP, the SDK's own client), an abstention is ``abstained`` with the one text
every interface shows, never fenced as if it were stored text; ``k`` hits, whatever the
recipe."""

from __future__ import annotations

import asyncio
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memstrata.engine import NOT_IN_MEMORY
from memstrata.importers import jsonl
from memstrata.llm.fence import unfence

TURNS = [
    {"id": "t1", "speaker": "Maya", "text": "I booked flights to Lisbon for June."},
    {"id": "t2", "speaker": "Tomas", "text": "We adopted a greyhound called Pepper."},
    {"id": "t3", "speaker": "Maya", "text": "Pepper is a lovely name for a dog."},
]
UNKNOWN = "What is the boiling point of mercury?"


def _mcp(rest: httpx.Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    url = str(rest.base_url).rstrip("/").removesuffix("/v1") + "/mcp/"

    async def call() -> Any:
        async with Client(streamable_http_client(url)) as client:
            return await client.call_tool(tool, args)

    result = asyncio.run(call())
    assert not result.is_error, result
    return dict(result.structured_content)


def test_an_abstention_reads_the_same_over_rest_and_mcp(
    served: tuple[httpx.Client, Path],
) -> None:
    client, _ = served
    added = client.post("/namespaces/me/episodes", json={"episodes": TURNS})
    assert added.status_code in (200, 201), added.text
    rest = client.post("/namespaces/me/ask", json={"question": UNKNOWN}).json()
    assert rest["abstained"] is True
    assert rest["text"] == NOT_IN_MEMORY and rest["sources"] == []
    mcp = _mcp(client, "ask_memory", {"question": UNKNOWN, "namespace": "me"})
    assert mcp == {"answer": NOT_IN_MEMORY, "sources": [], "abstained": True}
    # an answer is stored text, quoted: fenced as such
    found = _mcp(client, "ask_memory", {"question": "What is the dog called?", "namespace": "me"})
    assert found["abstained"] is False and found["answer"].startswith("<data-")
    assert "Pepper" in unfence(found["answer"])


def test_rest_search_and_ask_carry_k_hits_whatever_the_recipe(
    served: tuple[httpx.Client, Path],
) -> None:
    """``k`` counts every hit: a mnemis search or ask of the default k (10) carries 10,
    not 10 episodes and 20 of each other kind."""
    client, _ = served
    path = resources.files("memstrata.data").joinpath("sample_conversation.jsonl")
    turns = [item for _, item in jsonl.read(Path(str(path))) if isinstance(item, dict)]
    turns = [{"occurred_at": t.pop("at"), **t} for t in turns]
    assert client.post("/namespaces/me/episodes", json={"episodes": turns}).status_code < 300
    built = client.post("/namespaces/me/build", json={"recipe": "mnemis", "tier": "heuristic"})
    assert built.status_code == 200, built.text
    question = "Where is Maya's talk?"
    for k in (3, None):
        body: dict[str, Any] = {"recipe": "mnemis", **({"k": k} if k else {})}
        found = client.post("/namespaces/me/search", json={"query": question, **body}).json()
        answer = client.post("/namespaces/me/ask", json={"question": question, **body}).json()
        want = k or 10
        assert len(found["hits"]) == want, [h["kind"] for h in found["hits"]]
        assert {h["kind"] for h in found["hits"]} == {"episode", "fact", "entity"}
        assert 0 < len(answer["hits"]) <= want
