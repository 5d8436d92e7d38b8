"""Amounts a speaker states, and the successions of them a question about one asks for.

A value that changes is often a number said without a clause around it: "85 kg deadlift
yesterday!", "Final lift of the year: 95 kg.", "Great Manchester Run again — 47:35!".
The statement reader (:mod:`memstrata.knowledge.statements`) needs a subject and a verb,
so it reads none of these; yet a question about the amount ("What is Lena's deadlift
personal best now?") needs them in order.

An amount here is a number written in digits with its unit: the noun it counts ("95
kg", "24,000 lira"), money (an amount the parse labels money, one beside a currency sign
or naming a currency: money is one unit, whatever the currency), or a duration (a time
unit, or minutes and seconds written "47:35"). A rate is an amount in a unit of its own
("80 km a week": ``km per week``), except money: a rent is said with "a month" or
without it. A number
without a unit, a date and a clock time are no amounts ("4 am", "in 2024").

A question asks for an amount (:func:`~memstrata.knowledge.asking.asks_amount`: "how
much", "what is X's ...") of a subject when the subject's own turns among the hits
state an amount whose turn also says one of the question's words (the *anchor*: "deadlift"
in "85 kg deadlift"). Every turn of that speaker stating an amount of the anchor's unit
is then a statement of the same value at its time, whether or not it repeats the word
("Final lift of the year: 95 kg"); they form a succession in conversation order.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memstrata.knowledge.asking import says
from memstrata.knowledge.statements import LONGEST, period
from memstrata.nlp import analyse, fold, name_key

if TYPE_CHECKING:
    from spacy.tokens import Token

    from memstrata.knowledge.asking import Asked, Focus

#: the units of time a duration is counted in (lemmas)
TIME_UNITS = frozenset("second sec minute min hour hr h".split())
#: names and codes of currencies the parse does not always label as money ("1,150
#: euros", "24,000 lira"): money is one unit, whatever the currency, as in a rate
CURRENCIES = frozenset(
    "euro eur dollar usd buck pound gbp quid franc chf lira try krone kroner krona kronor "
    "dkk sek nok złoty zloty pln koruna czk kč forint huf yen jpy yuan cny rmb renminbi "
    "won krw rupee inr peso real brl rand zar ruble rouble rub hryvnia uah leu lev "
    "shekel ils dirham aed riyal baht thb ringgit rupiah dinar naira cedi shilling".split()
)
#: words after a number that make it a clock time, not an amount
_CLOCK = frozenset({"am", "pm", "a.m.", "p.m.", "o'clock", "oclock"})
#: minutes and seconds ("47:35", "1:02:10")
_DURATION = re.compile(r"^\d{1,3}(:\d{2}){1,2}$")
_DIGIT = re.compile(r"\d")
#: entity labels of a number that is no amount
_NOT_AMOUNT = frozenset({"DATE", "TIME", "PERCENT", "ORDINAL"})
#: parts of speech of a number's head that count nothing
_NOT_UNIT = frozenset({"VERB", "AUX", "ADP", "PUNCT", "DET", "PRON", "NUM", "CCONJ", "SCONJ"})


@dataclass(frozen=True)
class Amount:
    """That turn ``source``'s speaker (``subject``, a name key) stated ``value`` in
    ``unit`` at ``at``; ``words``: the folded words and lemmas of the turn."""

    subject: str
    unit: str
    value: str
    source: str
    at: float | None
    words: frozenset[str]


def amounts(
    text: str, *, source: str, speaker: str | None, at: float | None = None
) -> list[Amount]:
    """The amounts ``text`` states, each unit once per turn (its first amount)."""
    if not speaker or len(text) > LONGEST or not _DIGIT.search(text):
        return []
    (doc,) = analyse([text])
    words = frozenset({fold(t.text) for t in doc} | {fold(t.lemma_) for t in doc})
    out: dict[str, Amount] = {}
    for t in doc:
        if not _DIGIT.search(t.text):
            continue
        found = _amount(t)
        if found is not None and found[0] not in out:
            unit, value = found
            out[unit] = Amount(name_key(speaker), unit, value, source, at, words)
    return list(out.values())


def _amount(t: Token) -> tuple[str, str] | None:
    """(unit, the words that state it) when ``t`` is the number of an amount."""
    nxt = t.doc[t.i + 1] if t.i + 1 < len(t.doc) else None
    if nxt is not None and fold(nxt.text) in _CLOCK:
        return None
    if _DURATION.match(t.text):
        at_clock = t.ent_type_ == "TIME" or fold(t.head.text) in ("at", "by", "until", "from")
        return None if at_clock else ("duration", t.text)
    if not t.like_num:
        return None
    sign = any(unicodedata.category(c) == "Sc" for c in t.text) or any(
        x.pos_ == "SYM" and unicodedata.category(x.text[0]) == "Sc"
        for x in (*t.children, *t.head.children)
    )
    if t.ent_type_ == "MONEY" or sign:
        return "money", _span(t, t.head if t.dep_ in ("nummod", "quantmod") else t)
    # the word the number counts, whatever its tag ("kg" may be read as an interjection)
    if t.dep_ not in ("nummod", "quantmod", "compound") or t.head.pos_ in _NOT_UNIT:
        return None
    m = t.head
    unit = fold(m.lemma_)
    if unit in CURRENCIES or fold(m.text) in CURRENCIES:
        unit = "money"
    elif unit in TIME_UNITS:
        unit = "duration"
    if unit not in ("money", "duration") and (
        t.ent_type_ in _NOT_AMOUNT or m.ent_type_ in _NOT_AMOUNT or unit in _CLOCK
    ):
        return None
    return (unit if unit == "money" else _per(unit, m)), _span(t, m)


def _per(unit: str, m: Token) -> str:
    """A rate's unit is its own: "150 km a week" is ``km per week``, not ``km`` (the car's
    290,000 km is no value of it)."""
    every = period(m)
    return f"{unit} per {every}" if every else unit


def _span(t: Token, m: Token) -> str:
    """The number, its unit and the numbers and signs they hold ("52 minutes 10", "£950")."""
    at = {t.i, m.i}
    at |= {c.i for c in m.children if c.dep_ in ("nummod", "quantmod") or c.pos_ == "SYM"}
    at |= {c.i for c in t.children if c.pos_ == "SYM"}
    return t.doc[min(at) : max(at) + 1].text


def asked_amounts(asks: Focus, stated: Iterable[Amount]) -> list[list[Amount]]:
    """The successions of amounts a question asking ``asks`` is about (see the module):
    per subject asked about and anchor unit, that speaker's amounts of the unit, one a
    turn, in conversation order (as given). Only successions of two turns or more."""
    by: dict[tuple[str, str], list[Amount]] = defaultdict(list)
    for a in stated:
        if a.subject in asks.subjects:
            by[(a.subject, a.unit)].append(a)
    out = []
    for seq in by.values():
        turns = list({a.source: a for a in seq}.values())
        if len(turns) > 1 and any(says(a.words, asks.words) for a in turns):
            out.append(turns)
    return out


def amount_pairs(wants: Asked, runs: Sequence[Sequence[Amount]]) -> list[tuple[str, str]]:
    """Each turn after the one before it in its succession, when it states another
    value, or for ``now`` the same one again (the latest says it holds still)."""
    out = []
    for run in runs:
        for before, after in zip(run, run[1:], strict=False):
            if wants == "now" or _number(before.value) != _number(after.value):
                out.append((before.source, after.source))
    return out


def amount_lead(wants: Asked, runs: Sequence[Sequence[Amount]]) -> tuple[str, str] | None:
    """The answer's first words from the longest succession: the value asked for and
    the one it replaced or that replaced it ("95 kg; before that 85 kg"), with the turn
    stating it; None without a succession."""
    if not runs:
        return None
    run = max(runs, key=len)
    if wants == "first":
        return f"{run[0].value}; then {run[1].value}.", run[0].source
    if wants == "past":
        return f"{run[-2].value}; then {run[-1].value}.", run[-2].source
    return f"{run[-1].value}; before that {run[-2].value}.", run[-1].source


def _number(value: str) -> str:
    return "".join(c for c in value if c.isdigit() or c in ".:")


__all__ = ["Amount", "amount_lead", "amount_pairs", "amounts", "asked_amounts"]
