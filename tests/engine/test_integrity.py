"""Designs share a store, not records: every built-in design built side by side on one
namespace, then rebuilt, searched, deleted from and updated, as a user would.

* rebuilding design A leaves every other design's records identical (every pair);
* each record names its design; a route reads only its own design's records;
* after ``delete`` or ``update``, no record of any design holds the removed text, and
  each design's structural invariants still hold.

One store is built once per backend (heuristic tier, real MiniLM, real SQLite and
PostgreSQL) and copied per test.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest

import pgtest
from memstrata.eval.sites import PostgresSite, Site, SQLiteSite
from memstrata.memory import AsyncMemory
from memstrata.models import DERIVED_KINDS, Derived
from memstrata.retrieval.text import sentences

DESIGNS = ["mnemis", "personalai", "higmem", "memtree", "mindgraph"]
NS = "chat"
GONE = "gone"
GONE_TEXT = (
    "My cousin Zebulon adopted a ferret called Quillfeather last week, in Wolverhampton. "
    "Zebulon says Quillfeather already knows three tricks."
)
GONE_WORDS = ("zebulon", "quillfeather", "wolverhampton", "ferret", "tricks")
# the next turn stays on the topic, so aggregates (events, tree nodes) join both
AFTER_GONE = "My cousin adopted that little weasel from a rescue shelter last week."
MOVED = "moved"
MOVED_OLD = "Big news: I got posted to Lancaster for the new job, starting in May."
MOVED_NEW = "Big news: I got posted to Kendal for the new job, starting in May."


def turns() -> list[dict[str, Any]]:
    text = resources.files("memstrata.data").joinpath("sample_conversation.jsonl").read_text()
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    gone = dict(rows[9], id=GONE, text=GONE_TEXT, speaker="Tomas")
    pet = dict(rows[9], id="pet", text=AFTER_GONE, speaker="Tomas")
    moved = dict(rows[19], id=MOVED, text=MOVED_OLD, speaker="Maya")
    return rows[:10] + [gone, pet] + rows[10:20] + [moved] + rows[20:]


def run(path: str, embedder: Any, body: Any, **kw: Any) -> Any:
    async def main() -> Any:
        async with AsyncMemory.open(
            path, embedder=embedder, namespace=NS, **{"build.mode": "manual"}, **kw
        ) as m:
            return await body(m)

    return asyncio.run(main())


def records(m: AsyncMemory, builder: str | None = None) -> list[Derived]:
    return [r for kind in DERIVED_KINDS for r in m.store.get_records(NS, kind, builder=builder)]


def snapshot(m: AsyncMemory, builder: str) -> dict[str, str]:
    return {r.id: r.model_dump_json() for r in records(m, builder)}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def built(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, embedder: Any
) -> Iterator[tuple[str, Site]]:
    """The store built once per backend, and where its copies go."""
    folder = tmp_path_factory.mktemp("integrity")
    site: Site = SQLiteSite(folder)
    if request.param == "postgres":
        site = PostgresSite(pgtest.local_server().url("postgres"), prefix="integrity")
    path = site.new("five")

    async def build(m: AsyncMemory) -> None:
        await m.add_many(turns())
        for design in DESIGNS:
            (report,) = await m.build(recipe=design)
            assert report.failed == 0 and report.episodes == len(turns())

    run(path, embedder, build)
    yield path, site
    site.close()


COPIES = itertools.count()


@pytest.fixture
def store_copy(built: tuple[str, Site]) -> str:
    """A copy of the built store for one test (a file copy, or a database made from it
    as a template)."""
    path, site = built
    return site.new(f"copy{next(COPIES)}", path)


def test_every_record_names_the_design_that_built_it(store_copy: str, embedder) -> None:
    async def body(m: AsyncMemory) -> None:
        every = records(m)
        assert every and {r.builder for r in every} == set(DESIGNS)
        stats = (await m.stats(NS))["namespaces"][0]
        assert set(stats["records_by_builder"]) == set(DESIGNS)
        # both Mnemis and PersonalAI write entities and facts: each sees only its own
        for design in ("mnemis", "personalai"):
            own = m.store.get_records(NS, "entity", builder=design)
            assert own and all(r.builder == design for r in own)
        assert (
            sum(stats["records_by_builder"][d].get("entity", 0) for d in DESIGNS)
            == (stats["records"]["entity"])
        )

    run(store_copy, embedder, body)


@pytest.mark.parametrize("design", DESIGNS)
def test_a_route_reads_only_its_own_designs_records(store_copy: str, embedder, design) -> None:
    async def body(m: AsyncMemory) -> None:
        owner = {r.id: r.builder for r in records(m)}
        for query in ("Where is the conference?", "What did Tomas say about Kafka?"):
            res = await m.search(query, recipe=design, k=10)
            derived = [h for h in res.hits if h.kind != "episode"]
            assert all(owner[h.id] == design for h in derived), [
                (h.kind, owner.get(h.id)) for h in derived
            ]

    run(store_copy, embedder, body)


@pytest.mark.parametrize(("rebuilt", "other"), list(itertools.permutations(DESIGNS, 2)))
def test_rebuilding_one_design_leaves_anothers_records_identical(
    store_copy: str, embedder, rebuilt: str, other: str
) -> None:
    async def body(m: AsyncMemory) -> None:
        theirs = snapshot(m, other)
        mine = snapshot(m, rebuilt)
        assert theirs and mine
        (report,) = await m.build(recipe=rebuilt, rebuild=True)
        assert report.episodes == len(turns()) and report.failed == 0
        assert snapshot(m, other) == theirs
        stats = (await m.stats(NS))["namespaces"][0]
        assert stats["builds"][other]["done"] == len(turns())  # its marks are kept too
        assert len(snapshot(m, rebuilt)) == len(mine)  # built again, same shape

    run(store_copy, embedder, body)


def _removed_text_left(m: AsyncMemory, words: tuple[str, ...], text: str) -> list[str]:
    """Records that still say a removed word or a removed sentence."""
    said = [text[a:b].lower() for a, b in sentences(text) if len(text[a:b].split()) >= 5]
    out = []
    for rec in records(m):
        body = rec.model_dump_json(exclude={"sources", "id", "builder"}).lower()
        hits = [w for w in words if w in body] + [s for s in said if s in body]
        if hits:
            out.append(f"{rec.builder} {rec.kind} {rec.id}: {hits}")
    return out


async def _problems(m: AsyncMemory) -> dict[str, list[str]]:
    ctx = m.engine.context(NS, "heuristic")
    out = {}
    for design in DESIGNS:
        (builder,) = m.engine.builders(design)
        out[design] = await builder.check(ctx, NS)
    return out


def test_delete_leaves_no_removed_text_in_any_design(store_copy: str, embedder) -> None:
    async def body(m: AsyncMemory) -> None:
        assert _removed_text_left(m, GONE_WORDS, GONE_TEXT)  # every design quoted it
        before = await _problems(m)
        report = await m.delete([GONE])
        assert report == 1
        assert _removed_text_left(m, GONE_WORDS, GONE_TEXT) == []
        assert await _problems(m) == before
        stats = (await m.stats(NS))["namespaces"][0]
        assert stats["repairs"] == {}
        for design in DESIGNS:
            res = await m.search("Zebulon's ferret Quillfeather", recipe=design, k=10)
            assert not any("quillfeather" in h.text.lower() for h in res.hits)
            # what the other episodes built is still there
            assert stats["records_by_builder"][design]

    run(store_copy, embedder, body)


def test_update_leaves_no_replaced_text_in_any_design(store_copy: str, embedder) -> None:
    async def body(m: AsyncMemory) -> None:
        assert _removed_text_left(m, ("lancaster",), MOVED_OLD)
        await m.update(MOVED, MOVED_NEW)
        assert _removed_text_left(m, ("lancaster",), MOVED_OLD) == []
        for design in DESIGNS:
            (report,) = await m.build(recipe=design)  # folds the new text in
            assert report.episodes == 1 and report.failed == 0
            res = await m.search("Lancaster", recipe=design, k=10)
            assert not any("lancaster" in h.text.lower() for h in res.hits), design
            res = await m.search("Where was Maya posted for the new job?", recipe=design, k=10)
            assert any("kendal" in h.text.lower() for h in res.hits), design
        assert _removed_text_left(m, ("lancaster",), MOVED_OLD) == []

    run(store_copy, embedder, body)
