"""System-1 route over episodes: dense and BM25 candidates fused by reciprocal rank fusion.

On top of plain RRF it applies three LLM-free, data-set-independent refinements:

* **speaker matching** — when a question names a known speaker of the namespace, that
  person's own turns get a boost, and the name itself is dropped from the BM25 terms (every
  greeting addressed to a person contains the name, which otherwise crowds out evidence);
* **session context** — conversation turns lean on their neighbours ("yes, last week!"), so
  a candidate turn inherits part of the best score among the adjacent candidate turns of
  the same session;
* **date handling** — explicit dates in a question ("in May 2023", "2022") raise the turns
  that occurred in that period.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict

from memstrata.embed.base import Embedder, Vectors
from memstrata.models import Hit
from memstrata.retrieval import documents
from memstrata.retrieval.fusion import rrf
from memstrata.retrieval.text import content_terms, words
from memstrata.store.base import EpisodeMeta, SearchFilters, Store


class System1Params(BaseModel):
    """Knobs of the route; defaults are what ``memstrata bench locomo`` reports with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    candidates: int = 100
    rrf_k: int = 60
    dense_weight: float = 1.0
    bm25_weight: float = 1.0
    speaker_boost: float = 0.0
    drop_speaker_terms: bool = False
    neighbour_weight: float = 0.0
    neighbour_window: int = 1
    date_boost: float = 0.0


# The ``default`` recipe's knobs. A steeper rank discount (k=20 instead of 60) lets the
# refinements re-order within the head of the list without being swamped by the long,
# flat RRF tail. Round values; the dev-split sweep in docs/benchmarks.md shows the
# neighbourhood is flat (k 10-30).
DEFAULT_SYSTEM1 = System1Params(
    rrf_k=20,
    speaker_boost=0.5,
    drop_speaker_terms=True,
    neighbour_weight=0.2,
    neighbour_window=1,
    date_boost=0.3,
)


@dataclass
class QueryPlan:
    text: str
    terms: list[str]
    speakers: list[str]
    period: tuple[float, float] | None


MONTHS = {
    m: i + 1
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ]
    )
}
_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")


def period_range(
    year: int, month: int | None = None, day: int | None = None
) -> tuple[float, float]:
    """The ``[start, end)`` UTC timestamp range of a year, a month or a day."""
    if month is None:
        start, end = datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    elif day is None:
        start = datetime(year, month, 1, tzinfo=UTC)
        end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    else:
        start = datetime(year, month, day, tzinfo=UTC)
        end = start + timedelta(days=1)
    return start.timestamp(), end.timestamp()


def parse_period(text: str) -> tuple[float, float] | None:
    """A ``[start, end)`` timestamp range for "May 2023", "2022" or "1 May 2023"."""
    toks = words(text)
    for i, tok in enumerate(toks):
        if tok in MONTHS and i + 1 < len(toks) and _YEAR.fullmatch(toks[i + 1]):
            return period_range(int(toks[i + 1]), MONTHS[tok])
    match = _YEAR.search(text)
    return period_range(int(match.group(1))) if match else None


def plan_query(text: str, known_speakers: list[str], params: System1Params) -> QueryPlan:
    terms = content_terms(text)
    query_words = set(words(text))
    mentioned = []
    for speaker in known_speakers:
        parts = [w for w in words(speaker) if len(w) > 1]
        if parts and any(p in query_words or p + "'s" in query_words for p in parts):
            mentioned.append(speaker)
    if params.drop_speaker_terms and mentioned:
        names = {w for s in mentioned for w in words(s)}
        kept = [t for t in terms if t not in names]
        terms = kept or terms
    return QueryPlan(text=text, terms=terms, speakers=mentioned, period=parse_period(text))


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
        plans = [plan_query(q, speakers, p) for q in queries]
        if qvecs is None:
            qvecs = self.embedder.embed(queries)
        dense = self.store.dense_episodes(
            namespace, self.embedder.model_id, qvecs, p.candidates, filters
        )
        out = []
        for plan, dense_hits in zip(plans, dense, strict=True):
            bm25_hits = self.store.bm25_episodes(namespace, plan.terms, p.candidates, filters)
            scores = rrf(
                [[key for key, _ in dense_hits], [key for key, _ in bm25_hits]],
                k=p.rrf_k,
                weights=[p.dense_weight, p.bm25_weight],
            )
            routes: dict[int, list[str]] = defaultdict(list)
            for key, _ in dense_hits:
                routes[key].append("dense")
            for key, _ in bm25_hits:
                routes[key].append("bm25")
            out.append(self._refine(plan, scores, routes, k))
        return out

    def _refine(
        self,
        plan: QueryPlan,
        scores: dict[int, float],
        routes: dict[int, list[str]],
        k: int,
    ) -> list[Hit]:
        """Re-rank fused candidates; both routes applied the filters already in the store."""
        p = self.params
        meta = self.store.episode_meta(list(scores))
        base = {key: scores[key] for key in meta}
        final = dict(base)
        if p.neighbour_weight:
            by_session: dict[str, list[EpisodeMeta]] = defaultdict(list)
            for m in meta.values():
                if m.session is not None:
                    by_session[m.session].append(m)
            for group in by_session.values():
                group.sort(key=lambda m: m.seq)
                w = p.neighbour_window
                for i, m in enumerate(group):
                    near = [
                        base[g.key]
                        for g in group[max(0, i - w) : i + w + 1]
                        if g.key != m.key and abs(g.seq - m.seq) <= w
                    ]
                    if near:
                        final[m.key] += p.neighbour_weight * max(near)
        for key, m in meta.items():
            factor = 1.0
            if p.speaker_boost and plan.speakers and m.speaker in plan.speakers:
                factor += p.speaker_boost
            if (
                p.date_boost
                and plan.period
                and m.occurred_ts is not None
                and plan.period[0] <= m.occurred_ts < plan.period[1]
            ):
                factor += p.date_boost
            final[key] *= factor
        ranked = sorted(final, key=lambda key: -final[key])[:k]
        episodes = self.store.episodes_by_key(ranked)
        return [
            documents.episode_hit(episodes[key], final[key], routes[key])
            for key in ranked
            if key in episodes
        ]
