"""System-1's route over episodes: the candidate lists of a question, fused by reciprocal
rank fusion and re-ranked by the stages of :mod:`.refine`.

The lists: dense and BM25 over the namespace; the question read in a named speaker's own
voice, among her turns (``voice_weight``, :mod:`.voice`); dense and BM25 among the turns
said in a period the question names by date (``period_weight``); and the candidates
ranked by the BM25 evidence of the turns around them in their session
(``session_weight``, :func:`.sessions.in_session`).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from memstrata.embed.base import Embedder, Vectors
from memstrata.models import Hit
from memstrata.retrieval import when
from memstrata.retrieval.rank_fusion import rrf
from memstrata.retrieval.system1 import sessions
from memstrata.retrieval.system1.aliases import speaker_named, unknown_names
from memstrata.retrieval.system1.moves import explain, ranked
from memstrata.retrieval.system1.params import System1Params
from memstrata.retrieval.system1.plan import QueryPlan, name_parts, plan_query
from memstrata.retrieval.system1.refine import refine
from memstrata.retrieval.system1.voice import apart, in_voice
from memstrata.store.base import EpisodeMeta, ScoredKeys, SearchFilters, Store

#: turns read to learn whether a name the question uses is a speaker's other name
ALIAS_POOL = 100

#: named candidate lists, each as (key, rank) pairs, for :func:`~.moves.explain`
Trace = list[tuple[str, list[tuple[int, int]]]]


class Lists(NamedTuple):
    """One question's candidate lists, before fusion."""

    dense: ScoredKeys
    bm25: ScoredKeys
    #: the question in a named speaker's voice, one list per voice
    voices: list[ScoredKeys]
    #: dense and BM25 among the turns of the period the question names (or none)
    dated: list[ScoredKeys]


class EpisodeRoute:
    """Hybrid retrieval over one namespace's episodes."""

    name = "episodes"

    def __init__(self, store: Store, embedder: Embedder, params: System1Params | None = None):
        self.store = store
        self.embedder = embedder
        self.params = params or System1Params()

    def search(
        self,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None = None,
        qvecs: Vectors | None = None,
    ) -> list[list[Hit]]:
        """``qvecs``: the queries' vectors when the caller already has them."""
        p = self.params
        speakers = self.store.speakers(namespace)
        aliases = self._aliases(namespace, queries, speakers) if p.speaker_aliases else {}
        plans = [plan_query(q, speakers, p, aliases) for q in queries]
        readings = self._readings(plans, aliases, filters) if p.voice_weight else []
        # the queries and their readings in one request, one batch for the embedder
        texts = [text for _, _, text in readings]
        if qvecs is None:
            vecs = self.embedder.embed([*queries, *texts])
            qvecs, rvecs = vecs[: len(queries)], vecs[len(queries) :]
        else:
            rvecs = self.embedder.embed(texts)
        dense = self.store.dense_episodes(
            namespace, self.embedder.model_id, qvecs, p.candidates, filters
        )
        voiced = self._voiced(namespace, readings, rvecs, filters)
        out = []
        for i, (plan, dense_hits) in enumerate(zip(plans, dense, strict=True)):
            bm25_hits = self.store.bm25_episodes(namespace, plan.terms, p.candidates, filters)
            lists = Lists(
                dense_hits,
                bm25_hits,
                voiced.get(i, []),
                self._in_period(namespace, plan, qvecs[i : i + 1], filters),
            )
            routes, meta, scores, trace = self._fuse(lists)
            found, turns, base, ledger = refine(
                self.store, p, namespace, filters, plan, scores, routes, meta, k
            )
            explain(
                self.store, self.embedder, found, turns, base, ledger, trace, dense_hits, qvecs[i]
            )
            out.append(found)
        return out

    def _fuse(
        self, lists: Lists
    ) -> tuple[dict[int, list[str]], dict[int, EpisodeMeta], dict[int, float], Trace]:
        """The candidates of one question's lists: the routes that found each, their
        positions, their fused scores (the session's list joins last) and the named
        lists, for :class:`~memstrata.models.Why`."""
        p = self.params
        voices, dated = lists.voices, lists.dated
        fused = [lists.dense, lists.bm25, *voices, *dated]
        names = ["dense", "bm25"] + ["dense"] * len(voices) + ["dense", "bm25"][: len(dated)]
        routes: dict[int, list[str]] = defaultdict(list)
        for hits, route in zip(fused, names, strict=True):
            for key, _ in hits:
                if route not in routes[key]:
                    routes[key].append(route)
        meta = self.store.episode_meta(list(routes))
        scores = rrf(
            [[key for key, _ in hits] for hits in fused],
            k=p.rrf_k,
            weights=[p.dense_weight, p.bm25_weight]
            + [p.voice_weight] * len(voices)
            + [p.period_weight] * len(dated),
        )
        session = []
        if p.session_weight:
            # turns with the same evidence around them share a rank: a session's
            # turns near one answer tie, and their order in the store decides nothing
            session = sessions.in_session(lists.bm25, meta, p.session_window)
            for key, rank in session:
                scores[key] += p.session_weight / (p.rrf_k + rank)
        trace = [
            ("dense", ranked(lists.dense)),
            ("bm25", ranked(lists.bm25)),
            *(("voice", ranked(v)) for v in voices),
            *zip(("period-dense", "period-bm25"), map(ranked, dated), strict=False),
            ("session", session),
        ]
        return routes, meta, scores, trace

    def _in_period(
        self, namespace: str, plan: QueryPlan, qvec: Vectors, filters: SearchFilters | None
    ) -> list[ScoredKeys]:
        """The dense and BM25 hits among the turns said in the period the question names
        by date (or the day after, :data:`~.when.REPORT_LAG`); none without one."""
        if not self.params.period_weight or plan.period is None:
            return []
        start, end = (datetime.fromtimestamp(t, UTC) for t in plan.period)
        only = (filters or SearchFilters()).within(start, end + timedelta(seconds=when.REPORT_LAG))
        n = self.params.candidates
        (dense,) = self.store.dense_episodes(namespace, self.embedder.model_id, qvec, n, only)
        return [dense, self.store.bm25_episodes(namespace, plan.terms, n, only)]

    def _readings(
        self, plans: list[QueryPlan], aliases: dict[str, str], filters: SearchFilters | None
    ) -> list[tuple[int, str, str]]:
        """(question index, speaker, the question read in her voice) for each question
        about one speaker, and for each speaker of a question about two as a pair ("both
        Kate and Elise"; :mod:`~memstrata.retrieval.system1.voice`)."""
        readings: list[tuple[int, str, str]] = []
        for i, plan in enumerate(plans):
            if not 1 <= len(plan.speakers) <= 2:
                continue
            names = {
                s: name_parts(s) + [a for a in plan.alias_words if aliases.get(a) == s]
                for s in plan.speakers
            }
            for speaker in plan.speakers:
                if filters is not None and filters.speakers and speaker not in filters.speakers:
                    continue
                other = next((o for o in plan.speakers if o != speaker), None)
                text = (
                    plan.text if other is None else apart(plan.text, names[speaker], names[other])
                )
                voiced = in_voice(text, names[speaker]) if text is not None else None
                if voiced is not None:
                    readings.append((i, speaker, voiced))
        return readings

    def _voiced(
        self,
        namespace: str,
        readings: list[tuple[int, str, str]],
        vecs: Vectors,
        filters: SearchFilters | None,
    ) -> dict[int, list[list[tuple[int, float]]]]:
        """The dense hits of each reading (``vecs``, one row per reading) among its
        speaker's own turns, by question index."""
        out: dict[int, list[list[tuple[int, float]]]] = defaultdict(list)
        for row, (i, speaker, _) in enumerate(readings):
            only = (filters or SearchFilters()).model_copy(update={"speakers": [speaker]})
            (hits,) = self.store.dense_episodes(
                namespace, self.embedder.model_id, vecs[row : row + 1], self.params.candidates, only
            )
            out[i].append(hits)
        return out

    def _aliases(self, namespace: str, queries: list[str], speakers: list[str]) -> dict[str, str]:
        """The other names of the two speakers that the queries use: each name of a
        query that is no speaker's is looked up in the turns that hold it
        (:func:`~memstrata.retrieval.system1.aliases.speaker_named`)."""
        if len(speakers) != 2:
            return {}
        names = dict.fromkeys(n for q in queries for n in unknown_names(q, speakers))
        found: dict[str, str] = {}
        for name in names:
            hits = self.store.bm25_episodes(namespace, [name], ALIAS_POOL)
            turns = self.store.episode_texts([key for key, _ in hits]).values()
            speaker = speaker_named(name, ((e.speaker, e.text) for e in turns), speakers)
            if speaker is not None:
                found[name] = speaker
        return found
