"""``higmem`` and ``higmem-paper`` in one namespace: each recipe's builder owns its own turn
notes and events, its route and answerer read those and no others, ``show`` and the
views name which builder a record is of, and a delete repairs both."""

from __future__ import annotations

import asyncio
from pathlib import Path

from higmem_helpers import NS, ByFamily, add_turns, analysis_reply, llm_ctx
from test_higmem_paper import TURNS, paper_analysis, same_session, sheet

from memstrata import Memory
from memstrata.designs.higmem.builder import HiGMemBuilder, HiGMemPaperBuilder, HiGMemParams
from memstrata.designs.higmem.layer import BUILDERS, PAPER_BUILDER, Layers, layer_problems
from memstrata.designs.higmem.prompts import PAPER_ANALYSIS
from memstrata.designs.higmem.recipe import PAPER_BUILD
from memstrata.designs.higmem.records import Event, TurnNote
from memstrata.designs.higmem.view import EVENTS, PAPER_EVENTS
from memstrata.engine.contracts import Context
from memstrata.engine.views import ViewQuery
from memstrata.eval.invariants import Findings, all_episodes, check_records
from memstrata.llm.types import Message
from memstrata.store.base import Store


def owned(store: Store, ns: str, builder: str) -> tuple[dict[str, TurnNote], dict[str, Event]]:
    """The builder's turn notes by turn and events by id, as the store holds them."""
    notes = store.get_records(ns, "turn_note", builder=builder)
    events = store.get_records(ns, "event", builder=builder)
    assert all(r.builder == builder for r in [*notes, *events])
    return (
        {r.turn_id: r for r in notes if isinstance(r, TurnNote)},
        {r.id: r for r in events if isinstance(r, Event)},
    )


def sound(store: Store, embedder, ns: str) -> None:  # type: ignore[no-untyped-def]
    """Each builder's layers keep their invariants and cite only stored episodes."""
    for builder in BUILDERS:
        assert layer_problems(Layers.load(store, embedder, ns, builder)) == [], builder
        findings = Findings()
        check_records(store, ns, builder, all_episodes(store, ns), findings)
        assert findings.dangling == [] and findings.duplicates == [], (builder, findings)


def test_both_recipes_build_search_show_and_repair_one_namespace(
    tmp_path: Path, embedder, sample
) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, embedder=embedder, recipe="higmem", **{"build.mode": "manual"}) as m:
        m.add_many(sample)
        (ours,) = m.build(recipe="higmem")
        (paper,) = m.build(recipe="higmem-paper")
        # the second build found nothing of the first's done: it folded every turn in
        assert (ours.builder, paper.builder) == ("higmem", "higmem-paper")
        assert ours.episodes == paper.episodes == len(sample)
        for report in (ours, paper):
            assert report.counts["turn_note"] == len(sample) and report.counts["event"] >= 2
        (row,) = m.stats("default")["namespaces"]
        assert row["builds"]["higmem"]["done"] == row["builds"]["higmem-paper"]["done"]
        assert row["builds"]["higmem-paper"]["done"] == len(sample)
        ours_notes, ours_events = owned(m.store, "default", "higmem")
        paper_notes, paper_events = owned(m.store, "default", "higmem-paper")
        assert set(ours_notes) == set(paper_notes) == {str(t["id"]) for t in sample}
        assert not {n.id for n in ours_notes.values()} & {n.id for n in paper_notes.values()}
        assert not set(ours_events) & set(paper_events)

        # each recipe's route anchors on its own builder's events only
        for recipe, events in (("higmem", ours_events), ("higmem-paper", paper_events)):
            hits = m.search("Where is the conference?", k=10, recipe=recipe).hits
            anchors = {e for h in hits for e in h.metadata.get("events", [])}
            assert hits and anchors and anchors <= set(events), recipe
            assert all(set(h.ranks) == {recipe} for h in hits)

        # show: a turn has a note of each builder; an event is found under its own
        turn = str(sample[0]["id"])
        shown = [n.text for n in m.show(turn)]
        assert shown == [f"turn {turn}", f"higmem-paper: turn {turn}"]
        eid = next(iter(paper_events))
        (node,) = m.show(eid)
        assert node.text.startswith(f"higmem-paper: event {eid}")

        # the views: one per builder, each over its own events
        ctx = Context(m.store, embedder)
        for view, events in ((EVENTS, ours_events), (PAPER_EVENTS, paper_events)):
            drawn = view.render(ctx, "default", ViewQuery(limit=1000))
            assert {n.id for n in drawn.nodes if n.kind == "event"} == set(events)

        # a delete repairs both builders before it returns
        gone = str(sample[2]["id"])
        assert m.delete([gone]) == 1
        assert m.store.repair_backlog("default") == {}
        for builder in BUILDERS:
            notes, events = owned(m.store, "default", builder)
            assert len(notes) == len(sample) - 1 and gone not in notes, builder
            assert all(gone not in e.turn_ids for e in events.values()), builder
        sound(m.store, embedder, "default")
        for recipe in ("higmem", "higmem-paper"):
            assert m.search("Where is the conference?", k=10, recipe=recipe).hits


def both_families(kind: str, ours, paper):  # type: ignore[no-untyped-def]
    """A rule answering our prompt with ``ours`` and the paper's with ``paper``."""
    marker = {"analysis": PAPER_ANALYSIS, "refresh": "This layer includes a short summary"}[kind]

    def rule(messages: list[Message]) -> dict:  # type: ignore[type-arg]
        return paper(messages) if marker in messages[0].content else ours(messages)

    return rule


def tagged(tag: str, rule):  # type: ignore[no-untyped-def]
    """``rule``'s reply with keywords, or a summary, saying whose prompt it answered."""

    def tag_it(messages: list[Message]) -> dict:  # type: ignore[type-arg]
        reply = dict(rule(messages))
        if "keywords" in reply:
            reply["keywords"] = [tag]
        else:
            reply["summary"] = f"{tag} {reply['summary']}"
        return reply

    return tag_it


def test_the_llm_builds_keep_their_own_notes_and_events_and_both_repair(store, embedder) -> None:
    eps = add_turns(store, TURNS, embedder)
    backend = ByFamily(
        {
            "analysis": both_families(
                "analysis", tagged("ours", analysis_reply), tagged("paper", paper_analysis)
            ),
            "affiliation": same_session,
            "refresh": both_families("refresh", tagged("ours", sheet), tagged("paper", sheet)),
        }
    )
    ctx = llm_ctx(store, embedder, backend)
    builders = [HiGMemBuilder(), HiGMemPaperBuilder(HiGMemParams(**PAPER_BUILD))]
    for builder in builders:
        assert not asyncio.run(builder.update(ctx, NS, eps)).failed
        assert store.built_keys(NS, builder.name) == {ep.key for ep in eps}

    def check(turns: int) -> None:
        for builder, tag in (("higmem", "ours"), (PAPER_BUILDER, "paper")):
            notes, events = owned(store, NS, builder)
            assert len(notes) == turns and len(events) == 2, builder  # one event a session
            assert all(n.keywords == [tag] for n in notes.values()), builder
            assert all(e.summary.startswith(f"{tag} About: ") for e in events.values()), builder

    check(len(eps))
    store.delete_episodes(NS, [eps[1].id])
    for builder in builders:
        work = store.pending_repairs(NS, builder.name)
        assert work.episodes and "event" in work.changed.values(), builder.name
        asyncio.run(builder.repair(ctx, NS, work))
        store.clear_repairs(NS, work.ids)
    check(len(eps) - 1)
    for builder in BUILDERS:
        _, events = owned(store, NS, builder)
        assert all(eps[1].id not in e.turn_ids for e in events.values())
    sound(store, embedder, NS)
