"""Mnemis facts that change (issue 59, item 3), on SQLite and PostgreSQL: a later
statement in a slot the statements show to hold one value supersedes the earlier fact,
whatever the slot; multi-valued slots stay; the change may be said by the other speaker
or indirectly; deleting or correcting the later turn revives the earlier fact."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from facts_that_change import CHANGES, items, superseded
from memstrata import Memory
from memstrata.models import Fact, aware


def facts(m: Memory) -> list[Fact]:
    return [
        f for f in m.store.get_records("default", "fact", builder="mnemis") if isinstance(f, Fact)
    ]


def test_the_chat_s_changes_supersede_their_facts(store_at: Callable[[str], str], embedder) -> None:
    with Memory.open(store_at("m"), embedder=embedder, recipe="mnemis") as m:
        m.add_many(items())
        got = facts(m)
        assert superseded(got) == CHANGES
        by_turn = {
            s.episode: f for f in got for s in f.sources if f.relation != "mentioned together"
        }
        bristol, cardiff = by_turn["t1"], by_turn["t11"]
        assert (bristol.relation, cardiff.relation) == ("live in", "live in")
        assert bristol.invalid_at == cardiff.valid_at and cardiff.id in bristol.replaced_by
        # said by the other speaker: Mia's question is a fact about Jonas's home
        asked = by_turn["t12"]
        assert asked.relation == "live in" and asked.invalid_at is None
        assert {
            e.name
            for e in m.store.get_records("default", "entity", builder="mnemis")
            if e.id == asked.subject_id
        } == {"Jonas"}
        # said indirectly: "my new boss at Vattenfall" is where Jonas works
        assert by_turn["t15"].relation == "work at"
        # multi-valued stays: Mia's likes and Jonas's visits are never superseded
        assert not [f for f in got if f.invalid_at is not None and f.fact.startswith("Mia:")]


def test_deleting_or_correcting_the_later_turn_revives_the_earlier_fact(
    store_at: Callable[[str], str], embedder
) -> None:
    with Memory.open(store_at("m"), embedder=embedder, recipe="mnemis") as m:
        m.add_many(items())
        m.delete(["t19"])  # the rent went up: no longer said
        m.update("t25", "I run along the river most mornings.")  # no new distance
        got = facts(m)
        assert superseded(got) == CHANGES - {("t3", "t19"), ("t9", "t25")}
        rent = next(f for f in got if f.relation == "rent")
        assert rent.invalid_at is None and rent.replaced_by == []
        m.add_many(
            [
                {
                    "id": "t30",
                    "speaker": "Jonas",
                    "text": "My rent is £990 a month now.",
                    "occurred_at": datetime(2024, 1, 1, tzinfo=UTC).isoformat(),
                }
            ]
        )
        assert ("t3", "t30") in superseded(facts(m))


def test_said_only_by_the_other_speaker(store_at: Callable[[str], str], embedder) -> None:
    chat = [
        ("a", "Jonas", "Mia", "I live in Bristol, near the harbour."),
        ("b", "Mia", "Jonas", "How's Cardiff treating you?"),
    ]
    with Memory.open(store_at("m"), embedder=embedder, recipe="mnemis") as m:
        m.add_many(
            [
                {
                    "id": i,
                    "speaker": s,
                    "text": t,
                    "occurred_at": f"2024-0{n + 1}-01T10:00:00+00:00",
                }
                for n, (i, s, _, t) in enumerate(chat)
            ]
        )
        assert superseded(facts(m)) == {("a", "b")}


def test_turns_with_and_without_times_supersede_alike(
    store_at: Callable[[str], str], embedder
) -> None:
    """An import's ``at`` may be naive while a turn without one takes its stored time
    (aware): a fact ended by both is compared across the two, and no batch fails."""
    first = [
        ("a", "2024-03-15T00:00:00", "I live in Bristol, near the harbour."),
        ("b", None, "I live in Cardiff now, by the bay."),
        ("d", None, "I live in York now, close to the walls."),
    ]
    later = [("c", "2024-04-05T00:00:00", "I live in Leeds now, next to the station.")]
    with Memory.open(store_at("m"), embedder=embedder, recipe="mnemis") as m:
        for batch in (first, later):
            m.add_many(
                [{"id": i, "speaker": "Jonas", "text": t, "occurred_at": at} for i, at, t in batch]
            )
        (ns,) = m.stats()["namespaces"]
        assert ns["builds"]["mnemis"]["failed"] == 0 and ns["failures"] == []
        home = {s.episode: f for f in facts(m) for s in f.sources if f.relation == "live in"}
        assert set(home) == {"a", "b", "c", "d"}
        # b and d have no time of their own: placed when stored, after a and c
        assert [k for k in "abcd" if home[k].invalid_at is None] == ["d"]
        assert aware(home["a"].invalid_at) == datetime(2024, 4, 5, tzinfo=UTC)
