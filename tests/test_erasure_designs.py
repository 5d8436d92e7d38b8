"""Deleted means gone, in the structures every design builds on the LLM tier: MindGraph,
HiGMem and PersonalAI (MemTree and Mnemis are in tests/test_erasure.py), through a
scripted model whose every reply quotes the turn it was given, so names, facts, theses,
events, notes and concept nodes all hold the secret before the delete. After it, no file
holds a byte of it and no vector made from a text that held it is kept."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from erasure_helpers import (
    NS,
    Quoting,
    Recording,
    folders,
    open_memory,
    scan,
    settle,
    turns,
    use_llm,
    vector_of,
)
from memstrata.llm.fence import unfence
from memstrata.llm.types import Message


@pytest.fixture
def secret() -> str:
    return "hunter" + uuid.uuid4().hex[:10]


def operations(secret: str) -> Callable[[list[Message]], dict[str, Any]]:
    """MindGraph's reply: a claim node for each turn of the block, quoted whole, each
    linked to the one before."""

    def reply(messages: list[Message]) -> dict[str, Any]:
        prompt = unfence(messages[-1].content)
        found = [t["text"] for t in turns(secret) if t["text"] in prompt]
        ops: list[dict[str, Any]] = [
            {"op": "add_node", "id": f"n{i}", "type": "claim", "content": f"Ana says {t}"}
            | {"src": t}
            for i, t in enumerate(found)
        ]
        ops += [
            {"op": "add_edge", "source": f"n{i - 1}", "target": f"n{i}", "relation": t[:40]}
            for i, t in enumerate(found)
            if i
        ]
        return {"operations": ops}

    return reply


@pytest.fixture
def quoting(monkeypatch: pytest.MonkeyPatch, secret: str) -> Iterator[Quoting]:
    backend = Quoting({"operations": operations(secret)})
    with use_llm(monkeypatch, backend):
        yield backend


@pytest.mark.parametrize("recipe", ["mindgraph", "higmem", "higmem-paper", "personalai"])
def test_a_design_built_by_a_model_keeps_nothing_of_a_deleted_turn(
    store_at: Callable[[str], str],
    tmp_path: Path,
    embedder: Any,
    quoting: Quoting,
    secret: str,
    recipe: str,
) -> None:
    target = store_at("m")
    recording = Recording(embedder)
    with open_memory(target, recording, tmp_path / "cache", llm=True) as m:
        m.add_many(turns(secret))
        reports = m.build(recipe=recipe, tier="llm")
        assert sum(r.episodes for r in reports) == 6, reports
        records = m.stats(NS)["namespaces"][0]["records"]
        assert records, reports
        for query in (f"what is the wifi password {secret}", "who brings the apricot tart"):
            m.search(query, k=3, recipe=recipe)
        assert any(secret in r.messages[-1].content for r in quoting.requests)
        made = [t for t in recording.texts if secret in t]
        assert any(vector_of(m.store, embedder, t) for t in made)

        assert m.delete(["t2"]) == 1

        settle(m, target)
        assert scan(folders(target, tmp_path), secret) == []
        assert [t for t in made if vector_of(m.store, embedder, t)] == []
        hits = m.search("Grandma Odile apricot tart", k=3, recipe=recipe).hits
        assert "t5" in {s for h in hits for s in h.sources}
