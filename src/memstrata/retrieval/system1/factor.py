"""The factor stage of System-1: the rules that multiply a candidate's score.

Each rule marks candidates; a candidate's factor is 1 plus the value of every boost that
marks it, times 1 - the value of every penalty that marks it, in the order of
:data:`BOOSTS` then :data:`PENALTIES`. The rules:

* ``speaker_boost``: the turns of a speaker the question names;
* ``date_boost``: the turns about a period the question names (:mod:`memstrata.retrieval.when`);
* ``stance_boost``: the turns stating the like or dislike asked about (:mod:`.stance`);
* ``rule_boost``: standing instructions on how to answer (:mod:`.standing`), always;
* ``advice_boost``: turns stating a preference, when the question asks for advice;
* ``asker_boost``: the user's own turns, when the question is in the first person;
* ``brief_penalty``: turns of at most ``brief_words`` content words;
* ``question_penalty``: turns that ask something, between people (not a user's or an
  assistant's, whose questions to each other carry the user's facts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache, partial
from typing import Any

from memstrata.retrieval import when
from memstrata.retrieval.system1 import sessions, stance, standing
from memstrata.retrieval.system1.candidates import Candidates
from memstrata.retrieval.system1.sessions import Said
from memstrata.retrieval.text import at_most_content_words, content_terms


@dataclass(frozen=True)
class Mark:
    """One rule of the factor: the knob holding its value, what the question asks of it
    (falsy: the rule marks nothing) and whether a candidate carries it. A rule that
    ``reads`` tests the candidates' texts, read first for every such rule that asks."""

    knob: str
    asks: Callable[[Candidates], Any]
    holds: Callable[[Candidates, Any, int], bool]
    reads: bool = True

    def marked(self, c: Candidates, asked: object) -> set[int]:
        if not asked:
            return set()
        keys = c.texts if self.reads else c.meta
        return {key for key in keys if self.holds(c, asked, key)}

    def explained(self, c: Candidates, asked: object, marked: set[int]) -> Callable[[int], bool]:
        """How the ledger tells the candidates the rule applied to when a hit is
        explained: those it marked; a rule that reads no text is asked again, of the
        candidates known by then (``meta`` grows as later stages join turns)."""
        if self.reads or not asked:
            return marked.__contains__
        return partial(self.holds, c, asked)


def _periods(c: Candidates) -> list[when.Period]:
    """The periods the question names. A relative one ("last month") counts from the
    newest candidate: a question is asked after what it asks about. One placed from
    an event ("two weeks before the wedding") counts from the turn that best matches
    the event's words."""
    if not c.params.date_boost:
        return []
    times = [m.occurred_ts for m in c.meta.values() if m.occurred_ts is not None]
    now = datetime.fromtimestamp(max(times), UTC) if times else None
    found = when.periods(c.plan.text, now)
    for shift in when.event_shifts(c.plan.text):
        terms = content_terms(shift.event)
        top = c.store.bm25_episodes(c.namespace, terms, 1, c.filters) if terms else []
        at = c.store.episode_meta([top[0][0]]) if top else {}
        ts = next((m.occurred_ts for m in at.values()), None)
        if ts is not None:
            found.append(shift.period(ts))
    return found


def _asks_between_people(episode: Said) -> bool:
    """Whether a turn asks something and is neither a user's nor an assistant's (most
    turns ask nothing, which is the quickest to tell)."""
    if not sessions.asks(episode.text):
        return False
    return not standing.by_assistant(episode.role, episode.speaker) and not standing.by_asker(
        episode.role, episode.speaker
    )


@lru_cache(maxsize=8192)
def _brief(text: str, limit: int) -> bool:
    """Whether a turn says at most ``limit`` content words; asked of every candidate."""
    return at_most_content_words(text, limit)


def _text(c: Candidates, key: int) -> str:
    return c.texts[key].text


BOOSTS = (
    Mark(
        "speaker_boost",
        lambda c: set(c.plan.speakers) if c.params.speaker_boost else None,
        lambda c, named, key: c.meta[key].speaker in named,
        reads=False,
    ),
    Mark(
        "date_boost",
        _periods,
        lambda c, found, key: when.about(c.meta[key].occurred_ts, _text(c, key), found),
    ),
    Mark(
        "stance_boost",
        lambda c: stance.asks(c.plan.text) if c.params.stance_boost else None,
        lambda c, polarity, key: polarity in stance.states(_text(c, key)),
    ),
    Mark(
        "rule_boost",
        lambda c: c.params.rule_boost,
        lambda c, _, key: standing.instructs(_text(c, key)),
    ),
    Mark(
        "advice_boost",
        lambda c: bool(c.params.advice_boost) and standing.asks_advice(c.plan.text),
        lambda c, _, key: bool(stance.states(_text(c, key))),
    ),
    Mark(
        "asker_boost",
        lambda c: bool(c.params.asker_boost) and standing.first_person(c.plan.text),
        lambda c, _, key: standing.by_asker(c.texts[key].role, c.texts[key].speaker),
    ),
)
PENALTIES = (
    Mark(
        "brief_penalty",
        lambda c: c.params.brief_penalty,
        lambda c, _, key: _brief(_text(c, key), c.params.brief_words),
    ),
    Mark(
        "question_penalty",
        lambda c: c.params.question_penalty,
        lambda c, _, key: _asks_between_people(c.texts[key]),
    ),
)


def factor(c: Candidates) -> None:
    """Multiply each candidate's score by its factor; the ledger keeps each rule with its
    value and the candidates it marked."""
    p = c.params
    asked = [(mark, mark.asks(c)) for mark in (*BOOSTS, *PENALTIES)]
    # the candidates' texts, read only when a rule below asks for them
    if any(value for mark, value in asked if mark.reads):
        unread = [key for key in c.meta if key not in c.texts]
        c.texts = {**c.texts, **c.store.episode_texts(unread)}
    rules = []
    for mark, value in asked:
        marked = mark.marked(c, value)
        rules.append((mark.knob, getattr(p, mark.knob), marked, mark.explained(c, value, marked)))
    raises, cuts = rules[: len(BOOSTS)], rules[len(BOOSTS) :]
    c.ledger.factored = c.meta
    c.ledger.boosts = [(knob, value, test) for knob, value, _, test in raises]
    c.ledger.penalties = [(knob, value, test) for knob, value, _, test in cuts]
    for key in c.meta:
        f = 1.0
        for _, boost, keys, _ in raises:
            if key in keys:
                f += boost
        for _, penalty, keys, _ in cuts:
            if key in keys:
                f *= 1.0 - penalty
        c.final[key] *= f
