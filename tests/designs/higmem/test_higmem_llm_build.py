"""The HiGMem construction rules on the ``llm`` tier, with a scripted model: the window of
m = 5, NEW_EVENT, multi-event affiliation, refresh below τ and append at or above,
failures undone."""

from __future__ import annotations

import asyncio

from higmem_helpers import NS, ByFamily, add_turns, analysis_reply, llm_ctx

from memstrata.designs.higmem.builder import HiGMemBuilder, HiGMemParams, layer_cache
from memstrata.designs.higmem.layer import Layers, layer_problems
from memstrata.designs.higmem.records import Event, TurnNote
from memstrata.llm.fence import unfence

TURNS = [
    ("s1", "Ana" if i % 2 == 0 else "Ben", f"Turn number {i} about hiking trips.") for i in range(8)
]


def new_event(_messages):  # type: ignore[no-untyped-def]
    return {"events": ["NEW_EVENT"]}


def sheet(messages):  # type: ignore[no-untyped-def]
    ids = [
        line.split(" ", 1)[0]
        for line in unfence(messages[-1].content).split("Turns:\n")[1].splitlines()
    ]
    return {
        "summary": f"Sheet over {len(ids)} turns",
        "facts": [{"when": "2023-05-08", "fact": "f", "turns": ids}],
    }


def build(store, embedder, backend, params=None, turns=TURNS, session_break=None):  # type: ignore[no-untyped-def]
    eps = add_turns(store, turns)
    ctx = llm_ctx(store, embedder, backend)
    builder = HiGMemBuilder(params or HiGMemParams())
    results = [asyncio.run(builder.update(ctx, NS, [ep])) for ep in eps]
    return eps, results, Layers.load(store, embedder, NS)


def test_the_analysis_reads_the_five_earlier_turns_of_the_same_session(store, embedder) -> None:
    turns = [("s0", "Zed", "An older session turn.")] + TURNS
    backend = ByFamily({"analysis": analysis_reply, "affiliation": new_event})
    eps, results, lay = build(store, embedder, backend, turns=turns)
    assert all(not r.failed for r in results)
    asked = backend.asked["analysis"]
    last = unfence(asked[-1][-1].content)
    earlier = last.split("Earlier turns:\n")[1].split("\n\nCurrent turn:")[0].splitlines()
    assert [line.split(": ", 1)[1] for line in earlier] == [t[2] for t in TURNS[-6:-1]]
    assert "older session" not in last
    assert "(none: the turn opens the session)" in unfence(asked[1][-1].content)  # s1's first turn
    assert TURNS[-1][2] in last.split("Current turn:")[1]
    note = lay.notes[eps[-1].id]
    assert isinstance(note, TurnNote) and note.keywords == ["k"] and note.context == "c"
    assert [s.episode for s in note.sources] == [eps[-1].id]
    # the episode itself is untouched by the analysis
    assert store.get_episodes(NS, [eps[-1].id])[0].metadata == {}


def test_new_event_each_time_the_model_says_so(store, embedder) -> None:
    backend = ByFamily({"analysis": analysis_reply, "affiliation": new_event})
    eps, _, lay = build(store, embedder, backend, turns=TURNS[:3])
    assert len(lay.events) == 3
    assert len(backend.asked["affiliation"]) == 2  # none for the first turn: no candidate
    for ep in eps:
        (eid,) = lay.events_of[ep.id]
        event = lay.events[eid]
        assert event.turn_ids == [ep.id] and event.summary.startswith("F ")
        assert event.facts[0].turns == [ep.id]
    assert layer_problems(lay) == []
    assert "refresh" not in backend.asked  # a new event starts from the analysis' fact


def test_a_turn_joins_several_events_with_links_both_ways(store, embedder) -> None:
    def join(messages):  # type: ignore[no-untyped-def]
        listed = (
            unfence(messages[-1].content).split("Candidate events:\n")[1].split("\n\nNew turn")[0]
        )
        ids = [line.split(":")[0].split(" ")[0] for line in listed.splitlines()]
        return {"events": ids[:2] + ["E99"]} if len(ids) >= 2 else new_event(messages)

    backend = ByFamily({"analysis": analysis_reply, "affiliation": join, "refresh": sheet})
    eps, _, lay = build(store, embedder, backend, turns=TURNS[:3])
    # turns 0 and 1 start events; turn 2 joins both (the unknown E99 is dropped)
    assert len(lay.events) == 2
    assert sorted(lay.events_of[eps[2].id]) == sorted(lay.events)
    for event in lay.events.values():
        assert eps[2].id in event.turn_ids
        assert {s.episode for s in event.sources} == set(event.turn_ids)
    assert len(backend.asked["refresh"]) == 2
    assert layer_problems(lay) == []


def test_refresh_below_tau_and_append_at_or_above(store, embedder) -> None:
    def first(messages):  # type: ignore[no-untyped-def]
        return {"events": ["E1"]}

    backend = ByFamily({"analysis": analysis_reply, "affiliation": first, "refresh": sheet})
    eps, _, lay = build(store, embedder, backend, HiGMemParams(tau=3), turns=TURNS[:5])
    (event,) = lay.events.values()
    assert event.turn_ids == [e.id for e in eps]
    # |E| = 1 and 2 before turns 2 and 3: refreshed; |E| = 3 and 4: appended
    assert len(backend.asked["refresh"]) == 2
    assert event.summary == "Sheet over 3 turns"
    refreshed = unfence(backend.asked["refresh"][-1][-1].content)
    assert all(t[2] in refreshed for t in TURNS[:3])
    assert [f.turns for f in event.facts] == [[e.id for e in eps[:3]], [eps[3].id], [eps[4].id]]
    assert event.facts[-1].text.startswith("F ")  # the appended entry is the analysis' fact
    assert layer_problems(lay) == []


def test_a_failed_call_undoes_the_turn_and_reports_it(store, embedder) -> None:
    calls = {"n": 0}

    def flaky(messages):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        return "not json at all" if calls["n"] == 2 else {"events": ["E1"]}

    backend = ByFamily({"analysis": analysis_reply, "affiliation": flaky, "refresh": sheet})
    eps, results, lay = build(store, embedder, backend, turns=TURNS[:4])
    assert [bool(r.failed) for r in results] == [False, False, True, False]
    assert eps[2].id in results[2].failed
    (event,) = lay.events.values()
    assert event.turn_ids == [eps[0].id, eps[1].id, eps[3].id]
    assert eps[2].id not in lay.notes  # nothing of the failed turn was written
    assert store.built_keys(NS, "higmem") == {eps[i].key for i in (0, 1, 3)}
    assert layer_problems(lay) == []


def test_deleting_a_turn_unlinks_it_from_its_event(store, embedder) -> None:
    backend = ByFamily(
        {"analysis": analysis_reply, "affiliation": lambda m: {"events": ["E1"]}, "refresh": sheet}
    )
    eps, _, _ = build(store, embedder, backend, turns=TURNS[:3])
    store.delete_episodes(NS, [eps[1].id])
    lay = Layers.load(store, embedder, NS)
    (event,) = lay.events.values()
    assert isinstance(event, Event) and event.turn_ids == [eps[0].id, eps[2].id]
    assert eps[1].id not in lay.notes
    assert layer_problems(lay) == []
    assert layer_cache is not None


def test_affiliation_offers_k_events_and_always_the_recent_ones() -> None:
    from memstrata.designs.higmem.builder import candidate_events

    ranked = ["a", "b", "c", "d"]
    # fewer than k in all: everything is offered, the recent event after the ranked ones
    assert candidate_events(ranked, ["r"], 6) == ["a", "b", "c", "d", "r"]
    # at k: a recent event outside the top k replaces the least similar non-recent one
    assert candidate_events(ranked, ["r"], 4) == ["a", "b", "c", "r"]
    # a recent event already ranked keeps its place and is never the one dropped
    assert candidate_events(ranked, ["d", "r"], 4) == ["a", "b", "d", "r"]
    assert candidate_events(ranked, [], 4) == ranked
    assert len(candidate_events(ranked, ["r", "s", "t"], 4)) == 4


def test_dates_a_model_writes_its_own_way_are_read_by_parsing() -> None:
    from memstrata.designs.higmem.notes import calendar_date

    assert calendar_date("2023-05-07") == "2023-05-07"
    assert calendar_date(" 7 May 2023 ") == "2023-05-07"
    assert calendar_date("May 7, 2023") == "2023-05-07"
    assert calendar_date("2023-05-07T10:30:00") == "2023-05-07"
    assert calendar_date("May 2023") == "2023-05"
    assert calendar_date("2023") == "2023"
    for not_a_date in (
        "last Saturday",
        "unknown",
        "",
        "May",
        "turn 12345",
        "2023-02-30",
        "2023-13",
    ):
        assert calendar_date(not_a_date) is None


def test_the_analysis_keeps_a_date_written_in_words(store, embedder) -> None:
    def dated(messages):  # type: ignore[no-untyped-def]
        reply = analysis_reply(messages)
        reply["dates"] = [
            {"phrase": "last Sunday", "date": "May 7, 2023"},
            {"phrase": "someday", "date": "soon"},
        ]
        return reply

    backend = ByFamily({"analysis": dated, "affiliation": new_event, "refresh": sheet})
    eps, results, lay = build(store, embedder, backend, turns=TURNS[:1])
    assert not results[0].failed
    assert lay.notes[eps[0].id].dates == [{"phrase": "last Sunday", "date": "2023-05-07"}]


def test_the_analysis_writes_profile_keys_and_direct_links_into_its_window(store, embedder) -> None:
    """Appendix C's turn analysis returns profile-retrieval keys and direct links: keys
    are kept when they read 'Person: attribute', links when they name a shown turn."""

    def analysed(messages):  # type: ignore[no-untyped-def]
        reply = analysis_reply(messages)
        reply["profile"] = ["Ana: hiking", "no separator", "Ana: hiking", " : empty"]
        two = "W2 " in unfence(messages[-1].content)
        reply["links"] = ["W9", "W2"] if two else ["w1"]  # W9 is never shown
        return reply

    backend = ByFamily({"analysis": analysed, "affiliation": new_event})
    eps, results, lay = build(store, embedder, backend, turns=TURNS[:3])
    assert not any(r.failed for r in results)
    third = lay.notes[eps[2].id]
    assert third.profile == ["Ana: hiking"]
    assert third.links_to == [eps[1].id]  # W2; W9 was not shown
    assert lay.notes[eps[1].id].links_to == [eps[0].id]  # "w1": ids are read in any case
    assert lay.notes[eps[0].id].links_to == []  # the first turn has no window
    asked = unfence(backend.asked["analysis"][-1][-1].content)
    assert f"W1 [2023-05-08 13:56] Ana: {TURNS[0][2]}" in asked and "W2 [" in asked
    # Both ways: the earlier turns know who links to them.
    assert lay.linked_turns(eps[0].id) == [eps[1].id]
    assert lay.linked_turns(eps[1].id) == [eps[0].id, eps[2].id]
    assert [t for t, _, _ in lay.profiles()["ana"]] == [e.id for e in eps]  # every turn
    assert lay.profiles()["ana"][0][1:] == ("hiking", {"hike"})


def test_the_analysis_schema_bounds_links_by_the_window_shown() -> None:
    import pydantic
    import pytest

    from memstrata.designs.higmem.prompts import turn_analysis

    (system, _), model = turn_analysis(["[t] A: one", "[t] B: two"], "[t] A: three")
    # the prompt names the turns it shows (the window is a setting, not always five)
    assert "the 2 earlier turns W1 to W2" in system.content and "five" not in system.content
    assert "up to 4" in system.content  # the dates' bound, as the schema states it
    with pytest.raises(pydantic.ValidationError):
        model.model_validate(
            {"dates": [{"phrase": f"day {i}", "date": "2023-05-0{i}"} for i in range(1, 6)]}
        )
    (alone, _), _ = turn_analysis([], "[t] A: first")
    assert "no earlier turns" in alone.content
    assert model.model_validate({"links": ["W1", "W2"]}).links == ["W1", "W2"]
    with pytest.raises(pydantic.ValidationError):
        model.model_validate({"links": ["W1", "W2", "W1"]})
    with pytest.raises(pydantic.ValidationError):
        model.model_validate({"profile": ["A: a", "A: b", "A: c", "A: d", "A: e"]})


def test_removing_a_linked_turn_removes_the_link_on_repair(store, embedder) -> None:
    from memstrata.eval.invariants import Findings, all_episodes, check_records

    def analysed(messages):  # type: ignore[no-untyped-def]
        reply = analysis_reply(messages)
        earlier = unfence(messages[-1].content).split("Current turn:")[0]
        reply["links"] = ["W1"] if "W1 " in earlier else []
        return reply

    backend = ByFamily({"analysis": analysed, "affiliation": new_event, "refresh": sheet})
    eps, _, lay = build(store, embedder, backend, turns=TURNS[:3])
    assert lay.notes[eps[1].id].links_to == [eps[0].id]
    store.delete_episodes(NS, [eps[0].id])
    # Before the repair, the integrity checks see the dangling link (they follow it).
    findings = Findings()
    check_records(store, NS, "higmem", all_episodes(store, NS), findings)
    assert any("links_to names a missing episode" in d for d in findings.dangling)
    ctx = llm_ctx(store, embedder, backend)
    asyncio.run(HiGMemBuilder().repair(ctx, NS, store.pending_repairs(NS, "higmem")))
    lay = Layers.load(store, embedder, NS)
    assert all(eps[0].id not in n.links_to for n in lay.notes.values())
    assert lay.notes[eps[2].id].links_to == [eps[1].id]  # its window now starts at e1
    assert eps[0].id not in lay.linked_turns(eps[1].id)
    findings = Findings()
    check_records(store, NS, "higmem", all_episodes(store, NS), findings)
    assert findings.dangling == []
