"""PersonalAI triplets that change (issue 59, item 3), on SQLite and PostgreSQL: a
later statement in a slot the statements show to hold one value retires the earlier
triplet, whatever the slot; multi-valued slots stay; the change may be said by the
other speaker or indirectly; deleting or correcting the later turn revives it."""

from __future__ import annotations

from collections.abc import Callable

from facts_that_change import CHANGES, items, superseded
from memstrata import Memory
from memstrata.models import Fact


def triplets(m: Memory) -> list[Fact]:
    got = m.store.get_records("default", "fact", builder="personalai")
    return [f for f in got if isinstance(f, Fact)]


def test_the_chat_s_changes_retire_their_triplets(store_at: Callable[[str], str], embedder) -> None:
    with Memory.open(store_at("m"), embedder=embedder, recipe="personalai") as m:
        m.add_many(items())
        got = triplets(m)
        assert superseded(got) == CHANGES
        text = {f.fact: f for f in got}
        # said indirectly ("my new boss at Vattenfall") and by the other speaker
        assert text["Jonas work at Vattenfall"].invalid_at is None
        assert text["Jonas work at Deltares"].replaced_by == [text["Jonas work at Vattenfall"].id]
        asked = [f for f in got if {s.episode for s in f.sources} == {"t12"}]
        assert "Jonas live in Cardiff" in {f.fact for f in asked}
        # multi-valued stays: Mia's likes are never retired
        likes = [f for f in got if f.fact.startswith("Mia like")]
        assert likes and all(f.invalid_at is None for f in likes)


def test_deleting_or_correcting_the_later_turn_revives_the_earlier_triplet(
    store_at: Callable[[str], str], embedder
) -> None:
    with Memory.open(store_at("m"), embedder=embedder, recipe="personalai") as m:
        m.add_many(items())
        m.delete(["t19"])
        m.update("t25", "I run along the river most mornings.")
        got = triplets(m)
        assert superseded(got) == CHANGES - {("t3", "t19"), ("t9", "t25")}
        rent = next(f for f in got if f.fact == "Jonas rent £700")
        assert rent.invalid_at is None and rent.replaced_by == []
        m.add_many(
            [
                {
                    "id": "t30",
                    "speaker": "Jonas",
                    "text": "My rent is £990 a month now.",
                    "occurred_at": "2024-01-01T10:00:00+00:00",
                }
            ]
        )
        assert ("t3", "t30") in superseded(triplets(m))


def test_said_only_by_the_other_speaker(store_at: Callable[[str], str], embedder) -> None:
    with Memory.open(store_at("m"), embedder=embedder, recipe="personalai") as m:
        m.add_many(
            [
                {
                    "id": "a",
                    "speaker": "Jonas",
                    "text": "I live in Bristol, near the harbour.",
                    "occurred_at": "2024-01-01T10:00:00+00:00",
                },
                {
                    "id": "b",
                    "speaker": "Mia",
                    "text": "How's Cardiff treating you?",
                    "occurred_at": "2024-02-01T10:00:00+00:00",
                },
            ]
        )
        assert superseded(triplets(m)) == {("a", "b")}
