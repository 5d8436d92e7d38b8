"""HiGMem after a delete: the notes of the turns that read the removed turn in their
window are analysed again, the events that held it are derived again from the turns they
have left (no summary carried forward), on both tiers; the layers stay valid."""

from __future__ import annotations

import asyncio

from higmem_helpers import NS, ByFamily, add_turns, llm_ctx

from memstrata.designs.higmem.builder import HiGMemBuilder
from memstrata.designs.higmem.layer import Layers, layer_problems
from memstrata.engine.contracts import Context
from memstrata.llm.fence import unfence

TURNS = [
    ("s1", "Ana", "We are planning a hiking trip to the lakes in June."),
    ("s1", "Ben", "Great, I will bring the tent and the stove for the hiking trip."),
    ("s1", "Ana", "My cousin Zebulon lent us his canoe for the hiking trip."),
    ("s1", "Ben", "Then we can paddle across the lake on the hiking trip."),
    ("s1", "Ana", "I will book the campsite by the lake for the hiking trip."),
    ("s2", "Ben", "Unrelated: my knee hurts after football."),
]


def analysis(messages):  # type: ignore[no-untyped-def]
    """Resolves references from the window, as the prompt asks: the context quotes the
    turn before."""
    user = unfence(messages[-1].content)
    earlier = user.split("Earlier turns:\n")[1].split("\n\nCurrent turn:")[0].splitlines()
    turn = user.split("Current turn:\n", 1)[1]
    return {
        "keywords": ["hiking"],
        "tags": ["travel"],
        "context": f"reply to {earlier[-1][-60:]}",
        "dates": [],
        "fact": f"F {turn}",
    }


def join_first(messages):  # type: ignore[no-untyped-def]
    listed = unfence(messages[-1].content).split("Candidate events:\n")[1]
    return {"events": ["E1"] if listed.startswith("E1") else ["NEW_EVENT"]}


def sheet(messages):  # type: ignore[no-untyped-def]
    user = unfence(messages[-1].content)
    lines = user.split("Turns:\n")[1].splitlines()
    current = user.split("Current summary: ", 1)[1].split("\n", 1)[0]
    return {
        "summary": (f"{current[:40]} + " + " / ".join(ln.split(": ", 1)[1] for ln in lines))[:400],
        "facts": [
            {"when": "", "fact": line[:150], "turns": [line.split(" ")[0]]} for line in lines
        ],
    }


def said(store, embedder, word: str) -> list[str]:  # type: ignore[no-untyped-def]
    lay = Layers.load(store, embedder, NS)
    assert layer_problems(lay) == []
    recs = [*lay.notes.values(), *lay.events.values()]
    return [r.kind for r in recs if word in r.model_dump_json(exclude={"sources"})]


def test_llm_repair_reanalyses_the_window_and_refreshes_the_event(store, embedder) -> None:
    eps = add_turns(store, TURNS, embedder)
    backend = ByFamily({"analysis": analysis, "affiliation": join_first, "refresh": sheet})
    ctx = llm_ctx(store, embedder, backend)
    builder = HiGMemBuilder()
    for ep in eps:
        assert asyncio.run(builder.update(ctx, NS, [ep])).failed == {}
    assert sorted(set(said(store, embedder, "Zebulon"))) == ["event", "turn_note"]
    before = {k: len(v) for k, v in backend.asked.items()}

    store.delete_episodes(NS, ["e2"])
    asyncio.run(builder.repair(ctx, NS, store.pending_repairs(NS, "higmem")))

    again = backend.asked["analysis"][before["analysis"] :]
    # the turns after e2 in its session, within m = 5 (s2's turn never read it)
    assert [unfence(m[-1].content).split("Current turn:\n")[1][:22] for m in again] == [
        "[2023-05-08 13:59] Ben",
        "[2023-05-08 14:00] Ana",
    ]
    assert all("Zebulon" not in unfence(m[-1].content) for m in again)
    refreshed = backend.asked["refresh"][before["refresh"] :]
    assert len(refreshed) == 1  # the one event, from the turns it has left
    assert "Current summary: (new event)" in unfence(refreshed[0][-1].content)
    assert "Zebulon" not in unfence(refreshed[0][-1].content)
    assert said(store, embedder, "Zebulon") == []
    lay = Layers.load(store, embedder, NS)
    (event,) = [e for e in lay.events.values() if "e0" in e.turn_ids]
    assert event.turn_ids == ["e0", "e1", "e3", "e4", "e5"]  # the model joined e5 too


def test_heuristic_repair_leaves_no_removed_word(store, embedder) -> None:
    eps = add_turns(store, TURNS, embedder)
    ctx = Context(store, embedder)
    builder = HiGMemBuilder()
    assert asyncio.run(builder.update(ctx, NS, eps)).failed == {}
    assert "turn_note" in said(store, embedder, "Zebulon")  # e3's context quotes e2
    store.delete_episodes(NS, ["e2"])
    asyncio.run(builder.repair(ctx, NS, store.pending_repairs(NS, "higmem")))
    assert said(store, embedder, "Zebulon") == []
    assert len(Layers.load(store, embedder, NS).notes) == len(TURNS) - 1
