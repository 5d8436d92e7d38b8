"""``MemstrataStorage`` against CrewAI's own default storage, ``LanceDBStorage``: the same
records saved, read, listed, counted, searched, updated and deleted on both, compared;
then a crew whose agent (a scripted ``BaseLLM``) is shown a memory recalled through
memstrata with its source episode. Over ``Memory``, ``AsyncMemory`` and ``RemoteMemory``
to a store that tests/integrations/test_crewai.py serves (``CREWAI_SUITE_STORE_URL``)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from crewai.memory.storage.lancedb_storage import LanceDBStorage
from crewai.memory.types import MemoryRecord

from memstrata import AsyncMemory, InvalidInputError, Memory, RemoteMemory
from memstrata.embed import MiniLMEmbedder
from memstrata.integrations.crewai import MemstrataStorage

T0 = datetime(2026, 5, 1, 9, 0, 0)

NOTES = [
    ("r1", "Ana is vegetarian since May.", "/user/ana", ["food"], {"kind": "diet"}),
    ("r2", "Ana's sister Marta lives in Porto.", "/user/ana", ["family"], {"kind": "people"}),
    ("r3", "Ana runs five kilometres every morning.", "/user/ana/sport", ["health"], {}),
    ("r4", "Ben repairs old bicycles on weekends.", "/user/ben", ["hobby"], {"kind": "diy"}),
    ("r5", "The team ships a release every second Friday.", "/crew/planning", ["work"], {}),
    ("r6", "Ben is allergic to peanuts.", "/user/ben", ["food", "health"], {"kind": "diet"}),
    ("r7", "The office coffee machine is broken.", "/", [], {}),
]


def records(embedder: Any) -> list[MemoryRecord]:
    vectors = embedder([text for _, text, *_ in NOTES])
    return [
        MemoryRecord(
            id=rid,
            content=text,
            scope=scope,
            categories=cats,
            metadata=meta,
            importance=0.3 + 0.1 * i,
            created_at=T0 + timedelta(hours=i),
            last_accessed=T0 + timedelta(hours=i),
            source="ana" if "ana" in scope else None,
            embedding=vector,
        )  # fmt: skip
        for i, ((rid, text, scope, cats, meta), vector) in enumerate(
            zip(NOTES, vectors, strict=True)
        )
    ]


@pytest.fixture(params=["memory", "remote"])
def client(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: MiniLMEmbedder
) -> Iterator[tuple[Any, str]]:
    """(a memstrata client, the namespace prefix of this test)."""
    if request.param == "memory":
        with Memory.open(tmp_path / "m.db", embedder=embedder) as memory:
            yield memory, "crewai:"
        return
    url = os.environ.get("CREWAI_SUITE_STORE_URL")
    if not url:
        pytest.skip("no served store: tests/integrations/test_crewai.py serves one")
    with RemoteMemory(url) as remote:
        yield remote, f"crewai-{uuid.uuid4().hex[:8]}:"


@pytest.fixture
def pair(
    client: tuple[Any, str], tmp_path: Path, embedder: MiniLMEmbedder
) -> tuple[MemstrataStorage, LanceDBStorage]:
    memory, prefix = client
    ours = MemstrataStorage(memory, prefix=prefix, embedder=embedder)
    reference = LanceDBStorage(path=tmp_path / "lance", compact_every=0)
    for storage in (ours, reference):
        storage.save(records(ours.embedder))
    return ours, reference


def plain(record: MemoryRecord | None) -> dict[str, Any] | None:
    """A record as both stores must give it back (the vector aside, which memstrata
    keeps as its own index, and the provenance a search adds)."""
    if record is None:
        return None
    data = record.model_dump()
    data["metadata"] = {k: v for k, v in data["metadata"].items() if k != "memstrata"}
    return data


# (a prefix without its leading "/" is read differently by LanceDB's own methods)
PREFIXES = [
    None,
    "/",
    "/user",
    "/user/",
    "/user/ana",
    "/user/an",
    "/user/ana/sport",
    "/crew",
    "/nobody",
]


def test_records_read_back_as_lancedb_keeps_them(
    pair: tuple[MemstrataStorage, LanceDBStorage],
) -> None:
    ours, reference = pair
    for rid in ("r1", "r3", "r7", "missing"):
        assert plain(ours.get_record(rid)) == plain(reference.get_record(rid))
    for prefix in PREFIXES:
        assert ours.count(prefix) == reference.count(prefix), prefix
        assert ours.list_categories(prefix) == reference.list_categories(prefix), prefix
        for limit, offset in [(200, 0), (2, 0), (2, 2), (10, 5), (0, 0)]:
            mine = [plain(r) for r in ours.list_records(prefix, limit=limit, offset=offset)]
            theirs = [plain(r) for r in reference.list_records(prefix, limit=limit, offset=offset)]
            assert mine == theirs, (prefix, limit, offset)
    for parent in ["/", "/user", "/user/", "/user/ana", "/crew", "/nobody"]:
        assert ours.list_scopes(parent) == reference.list_scopes(parent), parent
    for scope in ["/", "/user", "/user/ana", "/crew/planning", "/nobody"]:
        assert ours.get_scope_info(scope) == reference.get_scope_info(scope), scope


QUERIES = [
    ("What does Ana eat?", None, None, None),
    ("bicycles", "/user", None, None),
    ("health", None, ["health"], None),
    ("diet", None, None, {"kind": "diet"}),
    ("Who lives in Porto?", "/user/ana", None, None),
    ("release schedule", "/crew", None, None),
    ("anything at all", "/nobody", None, None),
]


@pytest.mark.parametrize("query,prefix,categories,where", QUERIES)
def test_searches_find_what_lancedb_finds(
    pair: tuple[MemstrataStorage, LanceDBStorage], query: str, prefix: str | None,
    categories: list[str] | None, where: dict[str, Any] | None,
) -> None:  # fmt: skip
    """With a limit as large as the store both return every record that passes, in the
    same order (both rank by the cosine of the same MiniLM vectors); with a limit of
    one, the same best record."""
    ours, reference = pair
    (vector,) = ours.embedder([query])
    for limit in (len(NOTES), 1):
        kwargs = dict(
            scope_prefix=prefix, categories=categories, metadata_filter=where, limit=limit
        )
        mine, theirs = ours.search(vector, **kwargs), reference.search(vector, **kwargs)
        assert [r.id for r, _ in mine] == [r.id for r, _ in theirs], (query, limit)
        assert [plain(r) for r, _ in mine] == [plain(r) for r, _ in theirs]
        # the reference scores 1 / (1 + squared L2 distance); memstrata the cosine behind
        # it (of unit vectors, the squared distance is 2 - 2 cos), from 0 up
        for (_, mine_score), (_, their_score) in zip(mine, theirs, strict=True):
            assert abs(mine_score - max(0.0, 1 - (1 / their_score - 1) / 2)) < 1e-3


def test_a_found_record_names_its_source_episode(
    pair: tuple[MemstrataStorage, LanceDBStorage], client: tuple[Any, str]
) -> None:
    ours, _ = pair
    memory, prefix = client
    (vector,) = ours.embedder(["Which sister lives in Porto?"])
    (record, score), *_ = ours.search(vector, scope_prefix="/user/ana")
    assert record.id == "r2" and 0 < score <= 1
    source = record.metadata["memstrata"]
    assert source["episode"] == "r2" and source["sources"] == ["r2"]
    (episode,) = memory.get(source["sources"], namespace=prefix + "/user/ana")
    assert episode.text == record.content and episode.metadata["crewai"]["source"] == "ana"


def test_updates_and_deletes_as_in_lancedb(
    pair: tuple[MemstrataStorage, LanceDBStorage], client: tuple[Any, str]
) -> None:
    ours, reference = pair
    memory, prefix = client

    def same() -> None:
        assert [plain(r) for r in ours.list_records()] == [
            plain(r) for r in reference.list_records()
        ]
        assert ours.list_scopes("/") == reference.list_scopes("/")

    moved = reference.get_record("r3")
    assert moved is not None
    moved = moved.model_copy(update={"content": "Ana swims on Tuesdays.", "scope": "/user/ana"})
    for storage in pair:
        storage.update(moved)
    same()
    assert [v.text for v in memory.history("r3", namespace=prefix + "/user/ana")] == []
    assert prefix + "/user/ana/sport" not in memory.namespaces()  # its last record moved
    update = ours.get_record("r1").model_copy(update={"content": "Ana is vegan now."})  # type: ignore[union-attr]
    for storage in pair:
        storage.update(update)
    same()
    assert [v.text for v in memory.history("r1", namespace=prefix + "/user/ana")] == [
        "Ana is vegetarian since May."
    ]
    cases: list[dict[str, Any]] = [
        {"record_ids": ["r2", "nothing"]},
        {"categories": ["food"]},
        {"metadata_filter": {"kind": "diy"}, "scope_prefix": "/user"},
        {"older_than": T0 + timedelta(hours=5), "categories": ["work"]},
    ]
    for case in cases:
        assert ours.delete(**case) == reference.delete(**case), case
        same()
    for storage in pair:
        storage.reset("/user")
    same()
    for storage in pair:
        storage.reset()
    same()
    assert ours.count() == reference.count() == 0
    assert not [n for n in memory.namespaces() if n.startswith(prefix)]


def test_async_methods_over_an_async_client(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    async def run() -> tuple[list[str], int, int]:
        async with await AsyncMemory.open(tmp_path / "a.db", embedder=embedder) as memory:
            storage = MemstrataStorage(memory, embedder=embedder)
            await storage.asave(records(storage.embedder))
            (vector,) = storage.embedder(["peanut allergy"])
            found = await storage.asearch(vector, scope_prefix="/user/ben", limit=2)
            removed = await storage.adelete(categories=["health"])
            left = len((await memory.list(namespace="crewai:/user/ben")).episodes)
            return [r.id for r, _ in found], removed, left

    found, removed, left = asyncio.run(run())
    assert found == ["r6", "r4"] and removed == 2 and left == 1


def test_bad_input_stores_nothing(client: tuple[Any, str], embedder: MiniLMEmbedder) -> None:
    memory, prefix = client
    storage = MemstrataStorage(memory, prefix=prefix, embedder=embedder)
    good = MemoryRecord(content="fine", scope="/user/ana")
    bad = MemoryRecord(content="odd", scope="/user/ana", metadata={"at": object()})
    with pytest.raises(InvalidInputError, match="not JSON"):
        storage.save([good, bad])
    with pytest.raises(InvalidInputError, match="control character"):
        storage.save([MemoryRecord(content="x", scope="/user/a\nb")])
    with pytest.raises(InvalidInputError, match="storage's embedder"):
        storage.search([0.1] * 384)
    assert not [n for n in memory.namespaces() if n.startswith(prefix)]


def test_importing_memstrata_loads_no_crewai() -> None:
    code = (
        "import sys, memstrata, memstrata.integrations; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'crewai', 'lancedb'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
