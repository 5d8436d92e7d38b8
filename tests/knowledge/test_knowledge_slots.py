"""Single-valued slots learned from statements, and supersession
(memstrata.knowledge.slots), on the chat of issue 59."""

from __future__ import annotations

from facts_that_change import CHANGES, turns
from memstrata.knowledge.slots import Change, changes, learn, single_valued
from memstrata.knowledge.statements import HOME, Statement, statements


def chat_statements() -> list[Statement]:
    out: list[Statement] = []
    for tid, speaker, addressee, text, at in turns():
        out += statements(text, source=tid, at=at, speaker=speaker, addressee=addressee)
    return out


def pairs(found: list[Change]) -> set[tuple[str, str, str, str]]:
    return {(c.old.slot or c.new.slot, c.old.value, c.new.value, c.new.source) for c in found}


def test_the_chat_s_changes_supersede_and_nothing_else() -> None:
    found = changes(chat_statements())
    assert {(c.old.source, c.new.source) for c in found} == CHANGES
    assert {
        (HOME, "Bristol", "Cardiff", "t11"),
        ("play", "cello", "cello", "t13"),  # "I no longer play the cello" ends it
        ("work at", "Deltares", "Vattenfall", "t15"),  # said only as "my new boss at"
        ("rent", "£700", "£950", "t19"),  # "my rent is ..."
        ("money per month", "£700", "£950", "t19"),  # and the same as a rate
        ("favourite food", "lasagne", "ramen", "t21"),
        ("km per week", "30 km", "40 km", "t25"),  # a rate, whatever the verb
    } == pairs(found)


def test_single_valued_is_learned_and_multi_valued_stays() -> None:
    st = chat_statements()
    single = single_valued(st)
    assert {HOME, "work at", "rent", "favourite food", "km per week"} <= single
    assert "like" not in single  # "jazz and blues" in one turn, jazz again later
    assert learn(st)["like"].side_by_side >= 2
    assert not [c for c in changes(st) if c.old.subject == "mia"]


def test_a_slot_is_single_valued_only_when_the_statements_show_it() -> None:
    def s(value: str, source: str, at: float, slot: str = "collect") -> Statement:
        return Statement("ana", slot, value, source, at)

    # one change of an action verb's object is no evidence: both stamps stay
    assert changes([s("stamps", "a", 1), s("coins", "b", 2)]) == []
    # two values at once, then a third: side by side, never superseded
    both = [s("stamps", "a", 1), s("coins", "a", 1), s("shells", "b", 2), s("cards", "c", 3)]
    assert changes(both) == []
    # a state read as such (a copula, a class of the table) changes on one new value
    home = [Statement("ana", HOME, "Oslo", "a", 1, state=True)]
    home.append(Statement("ana", HOME, "Bergen", "b", 2, state=True))
    assert changes(home) == [Change(home[0], home[1])]


def test_the_same_value_again_is_no_change_and_order_is_by_time() -> None:
    a = Statement("ana", HOME, "Oslo", "a", 3.0, state=True)
    b = Statement("ana", HOME, "Bergen", "b", 1.0, state=True)
    c = Statement("ana", HOME, "oslo", "c", 4.0, state=True)
    assert changes([a, b, c]) == [Change(b, a)]  # Bergen (day 1) gave way to Oslo (day 3)
