"""System-1's re-ranking of the fused candidates: a list of stages, applied in order.

:data:`STAGES` is the order. Gains added before the factor (``neighbour_weight``,
``reply_weight``) are carried by it; the factor (:mod:`.factor`) multiplies; the gains
after it (``link_boost`` and ``cover_boost``, ``thread_weight``, ``ask_weight``) are
added to the factored score. Each stage does nothing when its knobs are off.
"""

from __future__ import annotations

from collections.abc import Callable

from memstrata.models import Episode, Hit
from memstrata.retrieval.system1 import sessions
from memstrata.retrieval.system1.candidates import Candidates
from memstrata.retrieval.system1.factor import factor
from memstrata.retrieval.system1.hops import second_step
from memstrata.retrieval.system1.moves import Ledger
from memstrata.retrieval.system1.params import System1Params
from memstrata.retrieval.system1.plan import QueryPlan
from memstrata.store.base import EpisodeMeta, SearchFilters, Store

Stage = Callable[[Candidates], None]


def session_context(c: Candidates) -> None:
    """``neighbour_weight``: conversation turns lean on their neighbours ("yes, last
    week!"), so a candidate gains a share of the best fused score among the adjacent
    candidates of its session."""
    weight = c.params.neighbour_weight
    if not weight:
        return
    for key, near in sessions.near(c.meta, c.params.neighbour_window).items():
        if near:
            gain = weight * max(c.base[n] for n in near)
            c.final[key] += gain
            c.ledger.gain("neighbour_weight", key, gain)


def answers_to_questions(c: Candidates) -> None:
    """``reply_weight``: the reply to a question among the best candidates borrows a share
    of the question's score; it need share no word with it (:func:`.sessions.replies`)."""
    p = c.params
    if not p.reply_weight:
        return
    gains, replied = sessions.replies(
        c.store,
        c.namespace,
        c.base,
        c.meta,
        c.routes,
        c.filters,
        weight=p.reply_weight,
        pool=p.reply_pool,
    )
    c.texts.update(replied)
    for key, gain in gains.items():
        c.final[key] = c.final.get(key, 0.0) + gain
        c.ledger.gain("reply_weight", key, gain)


def speakers_thread(c: Candidates) -> None:
    """``thread_weight``: a question about what someone said raises her turns a few turns
    around the best candidate, and the best as much, so it stays first
    (:func:`.sessions.thread`)."""
    p, final = c.params, c.final
    if not (p.thread_weight and c.plan.speakers and final):
        return
    best = max(final, key=lambda key: final[key])
    threaded, texts = sessions.thread(
        c.store, best, c.meta, c.routes, c.plan.speakers, c.filters, window=p.thread_window
    )
    c.texts = {**texts, **c.texts}
    if threaded:
        gain = p.thread_weight * final[best]
        for key in [*threaded, best]:
            final[key] = final.get(key, 0.0) + gain
            c.ledger.gain("thread_weight", key, gain)


def question_answered(c: Candidates) -> None:
    """``ask_weight``: when one of the best candidates answers someone else's question,
    the question gains a share of its score: evidence is marked on both turns
    (:func:`.sessions.asked`)."""
    p, final = c.params, c.final
    if not (p.ask_weight and final):
        return
    questions, seen = sessions.asked(
        c.store, c.best(p.ask_pool), c.meta, c.routes, c.filters, c.texts
    )
    c.texts = {**seen, **c.texts}
    for answer, question in questions.items():
        gain = p.ask_weight * final[answer]
        final[question] = final.get(question, 0.0) + gain
        c.ledger.gain("ask_weight", question, gain)


#: the stages in the order they apply (:data:`.moves.BEFORE` and :data:`.moves.AFTER`
#: name the gains on either side of the factor)
STAGES: tuple[Stage, ...] = (
    session_context,
    answers_to_questions,
    factor,
    second_step,
    speakers_thread,
    question_answered,
)


def refine(
    store: Store,
    params: System1Params,
    namespace: str,
    filters: SearchFilters | None,
    plan: QueryPlan,
    scores: dict[int, float],
    routes: dict[int, list[str]],
    meta: dict[int, EpisodeMeta],
    k: int,
) -> tuple[list[Hit], dict[int, Episode], dict[int, float], Ledger]:
    """Re-rank fused candidates (``meta``: theirs) through :data:`STAGES`. Returns the
    hits, their episodes (by key, in order), the candidates' fused scores and what moved
    them (:class:`~.moves.Ledger`)."""
    base = {key: scores[key] for key in meta}
    c = Candidates(store, params, namespace, filters, plan, meta, routes, base, dict(base))
    for stage in STAGES:
        stage(c)
    hits, turns = c.top(k)
    return hits, turns, base, c.ledger
