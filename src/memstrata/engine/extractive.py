"""The grounded answer without an LLM: an honest extract of what memory holds.

The answer quotes the sentences of the source episodes that best support the question,
each once, each with the date and speaker of the episode that said it
(``[2024-03-02] Tomas: I adopted a greyhound called Pepper.``). It quotes episodes, never
a record's rendering (a fact's validity window, a category's layer), so no markup of the
store reaches the reader and a sentence is never put in another speaker's mouth. A
derived hit (a fact, an event, a tree node) stands for the episodes it cites.

It abstains ("not in memory") when the evidence is weak:

* no hit, or no statement in the hits' episodes (questions are never quoted);
* the question names people of the conversation (its speakers) and no candidate
  sentence was said by one of them or names one, or another person's sentence supports
  the question better than any of theirs (by more than ``speaker_gap``): the memory may
  hold the event, but not for that person;
* the best sentence's support (cosine to the question plus the share of the question's
  content words it has, the names of the people asked about left out) is below
  ``min_support``, chosen on the dev sets (docs/benchmarks.md, "Abstention").

A question about time whose subject states the value asked for, in the slot asked
about, among the hits' turns (:func:`memstrata.knowledge.present.answering`), is
answered with that value and the sentence stating it, before any check of resemblance:
the statement is the evidence ("Where does Zoë work now?" - "ETH, since July 2024;
before that Deltares." and the quote). Words of time ("now", "these days") count for
nothing in the support: they say when, not what.

A question about time (:func:`memstrata.knowledge.asking.asked`) whose best sentence's
turn is in a succession of values (:mod:`memstrata.knowledge.present`) is answered by
the turn it asks for, first: the current value for "now", the earlier one for "before",
the turn where the value changed for "when"; then the turn it replaced or was replaced
by, so the reader sees both and which is which. Other quotes come in the order they were
said, the latest first for a question about now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memstrata.engine.contracts import NOT_IN_MEMORY, Answer, Context
from memstrata.knowledge.asking import Asked, asks_amount, focus, time_words, timeless
from memstrata.knowledge.asking import asked as asked_of_time
from memstrata.knowledge.present import (
    answering,
    asked_lead,
    asked_pairs,
    lead,
    read,
    read_amounts,
    recorded,
    succession_of,
)
from memstrata.knowledge.quantities import amount_lead, amount_pairs, asked_amounts
from memstrata.knowledge.slots import changes
from memstrata.models import Episode, Hit
from memstrata.nlp import is_latin, match_terms
from memstrata.retrieval.text import sentences, stems

#: support below which the extract abstains (docs/benchmarks.md, "Abstention")
MIN_SUPPORT = 0.3
#: a question naming a speaker abstains when another speaker's sentence supports it by
#: more than this over the best sentence by or about the named one
SPEAKER_GAP = 0.1


@dataclass(frozen=True)
class Quote:
    """A sentence of an episode, as the answer shows it."""

    episode: Episode
    start: int
    end: int
    rank: int  # of the first hit citing the episode

    @property
    def sentence(self) -> str:
        return self.episode.text[self.start : self.end]

    def shown(self) -> str:
        ep = self.episode
        when = f"[{ep.occurred_at:%Y-%m-%d}] " if ep.occurred_at else ""
        who = f"{ep.speaker}: " if ep.speaker else ""
        return f"{when}{who}{self.sentence}"


def extract_answer(
    ctx: Context,
    namespace: str,
    question: str,
    hits: list[Hit],
    *,
    max_items: int,
    max_sentences: int,
    min_support: float = MIN_SUPPORT,
    speaker_gap: float = SPEAKER_GAP,
) -> Answer:
    """The best supporting sentences of the hits' episodes, or an abstention."""
    quotes = _quotes(ctx, namespace, hits[:max_items])
    if not quotes:
        return _abstain(question, hits)
    people = _named_speakers(ctx, namespace, question)
    scores = _support(ctx, question, quotes, people)
    wants = asked_of_time(question)
    if wants is not None:
        # the person asked about states the value asked for, in the slot asked about:
        # that is the answer, whatever another sentence's resemblance to the question
        order = sorted(range(len(quotes)), key=lambda i: (-scores[i], quotes[i].rank))
        timed, said, stated = _in_succession(
            ctx, namespace, wants, question, quotes, order, max_sentences
        )
        if stated and said:
            return Answer(
                question=question,
                text=" ".join([said] + [q.shown() for q in timed]),
                sources=list(dict.fromkeys(q.episode.id for q in timed)),
                extractive=True,
                support=round(max(scores), 4),
                hits=hits,
            )
    if people:
        mine = [i for i, q in enumerate(quotes) if _about(q, people)]
        taken = set(mine)
        others = [scores[i] for i in range(len(quotes)) if i not in taken]
        if not mine:
            return _abstain(question, hits)
        best_mine = max(scores[i] for i in mine)
        if others and max(others) - best_mine > speaker_gap:
            return _abstain(question, hits, round(best_mine, 4))
        quotes, scores = [quotes[i] for i in mine], [scores[i] for i in mine]
    order = sorted(range(len(quotes)), key=lambda i: (-scores[i], quotes[i].rank))
    asked = _asked(question, people)
    best = round(scores[order[0]], 4)
    if best < min_support:
        return _abstain(question, hits, best)
    chosen: list[Quote] = []
    seen: set[str] = set()
    for i in order:
        key = " ".join(quotes[i].sentence.casefold().split())
        if key in seen:
            continue
        if chosen and not (scores[i] >= min_support and asked & set(stems(quotes[i].sentence))):
            continue  # a second sentence must support the question on its own
        seen.add(key)
        chosen.append(quotes[i])
        if len(chosen) == max_sentences:
            break
    timed, said, _ = _in_succession(ctx, namespace, wants, question, quotes, order, max_sentences)
    if timed:
        chosen = timed
    else:  # in the order said; for a question about now, the latest first
        chosen.sort(key=lambda q: (q.episode.seq, q.start), reverse=wants == "now")
    return Answer(
        question=question,
        text=" ".join(([said] if said else []) + [q.shown() for q in chosen]),
        sources=list(dict.fromkeys(q.episode.id for q in chosen)),
        extractive=True,
        support=best,
        hits=hits,
    )


def _in_succession(
    ctx: Context,
    namespace: str,
    wants: Asked | None,
    question: str,
    quotes: list[Quote],
    order: list[int],
    max_sentences: int,
) -> tuple[list[Quote], str | None, bool]:
    """For a question about time whose best quote's turn is in a succession of values:
    the best quote of each turn of that succession, the one asked for first (see the
    module), and the words that name the change when its statements are read; else
    nothing. The flag: the words are the value stated by the person asked about in the
    slot asked about (:func:`memstrata.knowledge.present.asked_lead`)."""
    if wants is None:
        return [], None, False
    pairs = recorded(ctx.store, namespace)
    turns = list(dict.fromkeys(quotes[i].episode.id for i in order))
    # the turns a recorded succession links to the best one, when the hits left them out
    linked = sorted({t for p in pairs if turns[0] in p for t in p} - set(turns))
    if linked:
        more = _quotes(ctx, namespace, [Hit(kind="episode", id=t, text="", score=0.0,
                                            sources=[t]) for t in linked])  # fmt: skip
        scores = _support(ctx, question, more)
        for i in sorted(range(len(more)), key=lambda i: -scores[i]):
            if more[i].episode.id not in turns:
                turns.append(more[i].episode.id)
            quotes, order = [*quotes, more[i]], [*order, len(quotes)]
    stated = read(ctx.store, namespace, turns)
    found = changes(stated)
    about = focus(question, ctx.store.speakers(namespace))
    mine = answering(stated, about)
    amounts = read_amounts(ctx.store, namespace, turns) if asks_amount(question) else []
    runs = asked_amounts(about, amounts)
    known = set(pairs) | {(c.old.source, c.new.source) for c in found}
    known |= set(asked_pairs(wants, mine)) | set(amount_pairs(wants, runs))
    value = asked_lead(wants, mine) or amount_lead(wants, runs)
    if value is not None:  # the turn stating the value asked for leads
        turns = [value[1], *(t for t in turns if t != value[1])]
    ranked = succession_of(wants, known, turns)
    if not ranked and value is not None:
        ranked = [value[1]]
    values = {a.source: a.value.casefold() for run in runs for a in run}
    values |= {s.source: s.value.casefold() for s in mine}

    def fits(q: Quote) -> bool:  # the sentence that states the value, when it is known
        return q.episode.id not in values or values[q.episode.id] in q.sentence.casefold()

    best = {
        t: min(
            (quotes[i] for i in order if quotes[i].episode.id == t),
            key=lambda q: not fits(q),
        )
        for t in ranked
    }
    shown = [best[t] for t in ranked[: max(2, max_sentences)]]
    said = value[0] if value is not None else None
    if said is None and len(ranked) > 1:
        said = lead(wants, found, ranked[0], ranked[1])
    return shown, said, value is not None


def _abstain(question: str, hits: list[Hit], support: float | None = None) -> Answer:
    return Answer(
        question=question,
        text=NOT_IN_MEMORY,
        abstained=True,
        extractive=True,
        support=support,
        hits=hits,
    )


def _quotes(ctx: Context, namespace: str, hits: list[Hit]) -> list[Quote]:
    """Every statement of the episodes the hits rest on, with the rank of the first hit.
    Questions are left out: they ask, they state nothing to quote as an answer."""
    rank: dict[str, int] = {}
    for i, h in enumerate(hits):
        for source in h.sources:
            rank.setdefault(source, i)
    episodes = ctx.store.get_episodes(namespace, list(rank))
    out = []
    for ep in episodes:
        for start, end in sentences(ep.text):
            if not ep.text[start:end].rstrip().endswith("?"):
                out.append(Quote(ep, start, end, rank[ep.id]))
    return out


def _named_speakers(ctx: Context, namespace: str, question: str) -> list[str]:
    """Speakers of the namespace the question names (by any word of their name)."""
    asked = _words(question)
    return [p for p in ctx.store.speakers(namespace) if _name_parts(p) & asked]


def _about(quote: Quote, people: list[str]) -> bool:
    """Said by one of ``people``, or naming one of them."""
    if quote.episode.speaker in people:
        return True
    said = _words(quote.sentence)
    return any(_name_parts(p) & said for p in people)


def _words(text: str) -> set[str]:
    """Words as names are matched (:func:`memstrata.nlp.match_terms`: folded, possessive
    off, Chinese and Japanese by character bigrams), numbers left out."""
    return {w for w in match_terms(text) if not w.isdigit()}


def _name_parts(name: str) -> set[str]:
    """The words of a name that can stand for it (not initials or "de"; a name of two
    Han characters or Hangul syllables is whole)."""
    return {w for w in _words(name) if len(w) > 2 or (len(w) == 2 and not is_latin(w[0]))}


def _asked(question: str, people: Sequence[str]) -> set[str]:
    """The question's stemmed content words, the names of the people it asks about left
    out: the filter on people has already made sure a sentence is theirs, and a greeting
    that names them ("Hey Daniel!") supports nothing."""
    timely = {t for w in time_words(question) for t in stems(w)}
    return set(stems(question)) - {t for p in people for t in stems(p)} - timely


def _support(
    ctx: Context, question: str, quotes: list[Quote], people: Sequence[str] = ()
) -> list[float]:
    """Cosine to the question plus the share of the question's content words the
    sentence has (stemmed: "move" is "moved"; see :func:`_asked`)."""
    terms = _asked(question, people)
    vecs = ctx.embedder.embed([timeless(question)] + [q.sentence for q in quotes])
    cos = vecs[1:] @ vecs[0]
    out = []
    for i, q in enumerate(quotes):
        share = len(terms & set(stems(q.sentence))) / len(terms) if terms else 0.0
        out.append(float(np.clip(cos[i], -1.0, 1.0)) + share)
    return out
