"""LLM-guided retrieval (section 3.3): semantic turns, event-local prediction, a filter.

For a query: keywords (the ``query_keywords`` prompt, or the query's content terms on the
heuristic tier); the ``k_turn`` best turns by System-1 over the episodes (T_semantic)
and the ``k_event`` events most similar to the query (E_semantic); inside each of those
events, the turns predicted to answer (the ``event_prediction`` prompt, or the best
``per_event`` turns by query-to-turn score) form T_pred (Eq. 6); the union (Eq. 7) goes
through a filter (Eq. 8): the ``evidence_filter`` prompt, or on the heuristic tier a
relative-score cut that keeps every candidate scoring at least ``keep`` times the best
one. Either way the evidence set has its own size per question. The LLM's set is kept
whole, as in the paper (bounded only by the ``max_candidates`` it is shown; the recipe's
episode budget is None, so the fusion does not cut it to ``k``); the heuristic cut keeps
at most ``k``, and so does the fallback when the filter call fails.

Hits are episodes, best first; ``Hit.routes`` says where each came from:
``semantic#r`` (rank r in T_semantic) and ``event <id>`` (predicted inside that event).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC
from typing import ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memstrata import nlp
from memstrata.designs.higmem import prompts
from memstrata.designs.higmem.builder import layer_cache, stamp
from memstrata.designs.higmem.layer import BUILDER, PAPER_BUILDER, Layers, unit
from memstrata.designs.higmem.notes import note_text, turn_body
from memstrata.designs.higmem.records import Event, TurnNote
from memstrata.designs.higmem.sizing import ask, chars, cut, pack, room, split
from memstrata.embed.cache import embed_cached
from memstrata.engine.contracts import Context, Route
from memstrata.llm.base import LLMClient
from memstrata.llm.schema import list_reply_tokens
from memstrata.models import Episode, Hit, Span
from memstrata.retrieval import documents
from memstrata.retrieval.system1 import (
    DEFAULT_SYSTEM1,
    EpisodeRoute,
    System1Params,
    plan_query,
)
from memstrata.retrieval.text import content_terms, overlap, stem, stems, words
from memstrata.retrieval.when import period_range
from memstrata.store.base import SearchFilters


class GuidedParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    k_turn: int = Field(default=10, ge=1, description="turns of the semantic route")
    k_event: int = Field(default=10, ge=0, description="events used as anchors")
    use_events: bool = Field(default=True, description="False: the ablation without events")
    per_event: int = Field(default=1, ge=1, description="heuristic: turns predicted per event")
    keep: float = Field(
        default=0.6, ge=0, le=1, description="heuristic filter: keep scores >= keep * best"
    )
    speaker_bonus: float = Field(
        default=0.2, ge=0, description="heuristic: score added to turns of a person the query names"
    )
    neighbour_weight: float = Field(
        default=0.2, ge=0, description="heuristic: share of the best adjacent turn's score added"
    )
    semantic: Literal["system1", "cosine"] = Field(
        default="system1",
        description="T_semantic: System-1 with the default recipe's refinements, or the "
        "paper's cosine over the turn nodes",
    )
    shown_per_event: int | None = Field(
        default=None,
        ge=1,
        description="llm: turns shown per event, the most similar (None: all, the paper)",
    )
    predict_chars: int = Field(
        default=6000,
        ge=500,
        description="llm: characters of events per prediction prompt; more events, or a "
        "longer event, go in further prompts (prompt_budget 'fixed')",
    )
    prompt_budget: Literal["fixed", "model"] = Field(
        default="fixed",
        description="llm: 'fixed': predict_chars per prediction prompt and one filter "
        "prompt; 'model': both sized to the model's context window, a longer prediction "
        "or filter going in further prompts",
    )
    max_candidates: int | None = Field(
        default=30, ge=1, description="llm: candidates the filter reads (None: all of T_cand)"
    )
    k_profile: int = Field(
        default=5, ge=0, description="llm: turns found by their profile keys (0: none)"
    )
    link_expansion: bool = Field(
        default=True, description="llm: add the turns each candidate links to or is linked from"
    )
    sheet_lines: int | None = Field(
        default=8,
        ge=0,
        description="llm: fact-sheet lines shown with an event's summary (None: the whole sheet)",
    )
    shown_chars: int | None = Field(
        default=240, ge=40, description="llm: characters of a turn shown (None: whole turns)"
    )
    query: Literal["question+keywords", "keywords"] = Field(
        default="question+keywords",
        description="the embedding query of T_semantic and E_semantic: the question with "
        "its keywords, or q_kw alone (section 3.3; heuristic: the question's content terms)",
    )
    prompts: Literal["ours", "paper"] = Field(
        default="ours",
        description="llm: our keywords, prediction and filter prompts, or the paper's",
    )
    # System-1's links (link_boost) are off here: on BEAM dev they cost this route's
    # Recall@10 more than 0.005 (docs/benchmarks.md, "Links between the steps").
    system1: System1Params = Field(
        default_factory=lambda: DEFAULT_SYSTEM1.model_copy(update={"link_boost": 0.0})
    )


@dataclass
class Candidate:
    ep: Episode
    semantic: int | None = None  # rank in T_semantic, from 1
    events: list[str] = field(default_factory=list)  # events that predicted it
    via: list[str] = field(default_factory=list)  # "profile", "link <turn>"
    score: float = 0.0


def date_span(date: str) -> tuple[float, float] | None:
    """A resolved note date (``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``) as a ``[start, end)``
    UTC timestamp range; None when it is not one."""
    try:
        parts = [int(p) for p in date.split("-")]
        return period_range(*parts) if 1 <= len(parts) <= 3 else None
    except (ValueError, TypeError):
        return None


def in_period(ep: Episode, note: TurnNote | None, period: tuple[float, float]) -> bool:
    """The turn was said in the period, or its note resolves a date phrase into it."""
    when = ep.occurred_at
    if when is not None:
        ts = (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
        if period[0] <= ts < period[1]:
            return True
    for d in note.dates if note else []:
        span = date_span(d.get("date", ""))
        if span and span[0] < period[1] and span[1] > period[0]:
            return True
    return False


class GuidedRoute(Route[GuidedParams]):
    """Semantic turns plus event-anchored turns, filtered to a compact evidence set."""

    name = "higmem"
    surfaces_unbuilt = True  # System-1 ranks every stored episode
    Params = GuidedParams
    #: the builder whose notes and events the route reads
    builder: ClassVar[str] = BUILDER
    needs = (BUILDER,)

    async def search(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None = None,
    ) -> list[list[Hit]]:
        lay = await asyncio.to_thread(layer_cache(ctx).get, self.builder, namespace)
        if ctx.llm is None:
            return await asyncio.to_thread(
                self._heuristic, ctx, lay, namespace, queries, k, filters
            )
        llm = ctx.llm
        return list(
            await asyncio.gather(
                *(self._guided(ctx, llm, lay, namespace, q, k, filters) for q in queries)
            )
        )

    # shared steps -----------------------------------------------------------------------
    def _semantic(
        self,
        ctx: Context,
        lay: Layers,
        namespace: str,
        texts: list[str],
        filters: SearchFilters | None,
    ) -> list[list[tuple[Episode, float]]]:
        """T_semantic per query: System-1's fused ranking and score, or (``semantic =
        "cosine"``, Eq. 2 as the paper writes it) the turn nodes by cosine to the query: a
        turn node is T_t = (D_t, M_t), the turn with its keywords and resolved dates
        (:func:`~.notes.note_text`, the vectors the build embedded for affiliation, read
        from the embedding cache); a turn not analysed yet is its text alone."""
        if self.params.semantic == "cosine":
            qvecs = unit(np.asarray(ctx.embedder.embed(texts), dtype=np.float32))
            everyone = ctx.store.all_episodes(namespace)
            turns = [e for e in everyone if filters is None or filters.admits(e)]
            if not turns:
                return [[] for _ in texts]
            nodes = lay.embed([note_text(e, lay.notes.get(e.id)) for e in turns])
            out = []
            for q in qvecs:
                sims = nodes @ q
                top = np.argsort(-sims, kind="stable")[: self.params.k_turn]
                out.append([(turns[i], float(sims[i])) for i in top])
            return out
        route = EpisodeRoute(ctx.store, ctx.embedder, self.params.system1)
        hits = route.search(namespace, texts, self.params.k_turn, filters)
        ids = list(dict.fromkeys(h.id for hs in hits for h in hs))
        eps = {e.id: e for e in ctx.store.get_episodes(namespace, ids)}
        return [[(eps[h.id], h.score) for h in hs if h.id in eps] for hs in hits]

    def _anchors(self, lay: Layers, qvec: np.ndarray) -> list[tuple[str, float]]:
        if not self.params.use_events or not self.params.k_event:
            return []
        return lay.top_events(qvec, self.params.k_event)

    def _linked(
        self,
        ctx: Context,
        lay: Layers,
        namespace: str,
        anchors: list[tuple[str, float]],
        filters: SearchFilters | None,
    ) -> dict[str, Episode]:
        ids = list(dict.fromkeys(t for eid, _ in anchors for t in lay.events[eid].turn_ids))
        return _admitted(ctx, namespace, ids, filters)

    def _turn_vecs(self, ctx: Context, eps: list[Episode]) -> np.ndarray:
        texts = [documents.embed_text(e.text, e.speaker, e.metadata) for e in eps]
        return unit(embed_cached(ctx.store, ctx.embedder, texts))

    # heuristic tier ---------------------------------------------------------------------
    def _heuristic(
        self,
        ctx: Context,
        lay: Layers,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None,
    ) -> list[list[Hit]]:
        texts = queries
        if self.params.query == "keywords":  # q_kw: the question's content terms stand in
            texts = [" ".join(content_terms(q)) or q for q in queries]
        semantic = self._semantic(ctx, lay, namespace, texts, filters)
        qvecs = unit(ctx.embedder.embed(queries))
        kvecs = qvecs if texts is queries else unit(ctx.embedder.embed(texts))
        people = ctx.store.speakers(namespace)
        speakers = {w for s in people for w in words(s)}
        out = []
        for query, qvec, kvec, sem in zip(queries, qvecs, kvecs, semantic, strict=True):
            content = content_terms(query)
            kept = [t for t in content if t not in speakers] or content
            terms = list(dict.fromkeys(stem(t) for t in kept))
            plan = plan_query(query, people, self.params.system1)
            cands = {ep.id: Candidate(ep, semantic=r) for r, (ep, _) in enumerate(sem, start=1)}
            anchors = self._anchors(lay, kvec)
            linked = self._linked(ctx, lay, namespace, anchors, filters)
            pool = {**linked, **{c.ep.id: c.ep for c in cands.values()}}
            score = _Scorer(self, ctx, lay, qvec, terms, set(plan.speakers), plan.period)
            local = score(list(pool.values()))
            for eid, _ in anchors:
                inside = [t for t in lay.events[eid].turn_ids if t in linked]
                for t in sorted(inside, key=lambda t: -local[t])[: self.params.per_event]:
                    cands.setdefault(t, Candidate(linked[t])).events.append(eid)
            context = self._with_neighbours(ctx, [c.ep for c in cands.values()], score, filters)
            for c in cands.values():
                c.score = context[c.ep.id]
            out.append(self._hits(self._cut(list(cands.values()), k)))
        return out

    def _with_neighbours(
        self,
        ctx: Context,
        eps: list[Episode],
        score: _Scorer,
        filters: SearchFilters | None,
    ) -> dict[str, float]:
        """Session context, as System-1's ``default`` applies it (same weight): a turn
        gains ``neighbour_weight`` times the best score of the turns right before and after
        it in its session ("yes, last week!" leans on its neighbour). The neighbours are
        the session's own, scored like any turn, whichever route brought the turn in: the
        event layer changes which turns are candidates, not the context they are read in."""
        w = self.params.neighbour_weight
        own = score(eps)
        if not w:
            return own
        near = ctx.store.session_neighbours([e.key for e in eps], 1)
        adj = ctx.store.episodes_by_key(sorted({n for ns in near.values() for n in ns}))
        if filters is not None and not filters.is_empty():
            adj = {key: e for key, e in adj.items() if filters.admits(e)}
        around = score(list(adj.values()))
        out = {}
        for e in eps:
            ctx_scores = [around[adj[n].id] for n in near.get(e.key, []) if n in adj]
            out[e.id] = own[e.id] + (w * max(ctx_scores) if ctx_scores else 0.0)
        return out

    def _cut(self, cands: list[Candidate], k: int) -> list[Candidate]:
        """The heuristic filter: scores at least ``keep`` times the best, at most ``k``."""
        if not cands:
            return []
        ranked = sorted(cands, key=lambda c: -c.score)
        best = ranked[0].score
        return [c for c in ranked if c.score >= self.params.keep * best][:k]

    # llm tier ---------------------------------------------------------------------------
    async def _guided(
        self,
        ctx: Context,
        llm: LLMClient,
        lay: Layers,
        namespace: str,
        query: str,
        k: int,
        filters: SearchFilters | None,
    ) -> list[Hit]:
        """Keywords, the semantic candidates, the turns the events predict, the profile
        and link expansions, then the evidence filter's choice."""
        p = self.params
        ask_kw = prompts.paper_query_keywords if p.prompts == "paper" else prompts.query_keywords
        kw = await ask(llm, ask_kw(query), "keywords")
        words_ = [w.strip() for w in getattr(kw, "keywords", []) if w.strip()]
        if p.query == "keywords":  # q_kw alone; the question when the model gave none
            text = " ".join(words_) or query
        else:
            text = f"{query} {' '.join(words_)}".strip()
        sem = (await asyncio.to_thread(self._semantic, ctx, lay, namespace, [text], filters))[0]
        cands = {ep.id: Candidate(ep, semantic=r) for r, (ep, _) in enumerate(sem, start=1)}
        qvec = unit(await asyncio.to_thread(ctx.embedder.embed, [text]))[0]
        anchors = self._anchors(lay, qvec)
        linked = await asyncio.to_thread(self._linked, ctx, lay, namespace, anchors, filters)
        if anchors and linked:
            await self._predicted(ctx, llm, lay, query, qvec, anchors, linked, cands)
        if p.k_profile:
            found = await asyncio.to_thread(
                self._profiled, ctx, lay, namespace, [query, *words_], filters
            )
            for ep in found:
                cands.setdefault(ep.id, Candidate(ep)).via.append("profile")
        if p.link_expansion:
            await asyncio.to_thread(self._expand, ctx, lay, namespace, cands, filters)
        chosen = await self._filtered(llm, lay, query, list(cands.values()), k)
        for rank, c in enumerate(chosen):
            c.score = 1.0 / (rank + 1)
        return self._hits(chosen)

    async def _predicted(
        self,
        ctx: Context,
        llm: LLMClient,
        lay: Layers,
        query: str,
        qvec: np.ndarray,
        anchors: list[tuple[str, float]],
        linked: dict[str, Episode],
        cands: dict[str, Candidate],
    ) -> None:
        """Event prediction: the anchor events' sheets and turns (short ids) shown to the
        LLM, and the turns it names join ``cands`` under the event that holds them."""
        p = self.params
        vecs = self._turn_vecs(ctx, list(linked.values()))
        sims = dict(zip(linked, (vecs @ qvec).tolist(), strict=True))
        short: dict[str, str] = {}
        sid_of: dict[str, str] = {}
        blocks = []
        for eid, _ in anchors:
            inside = [t for t in lay.events[eid].turn_ids if t in linked]
            if p.shown_per_event is not None:
                inside = sorted(inside, key=lambda t: -sims[t])[: p.shown_per_event]
            shown = []
            for t in sorted(inside, key=lambda t: linked[t].seq):
                if t not in sid_of:
                    sid_of[t] = f"T{len(short) + 1}"
                    short[sid_of[t]] = t
                shown.append((sid_of[t], cut(stamp(linked[t]), p.shown_chars)))
            if shown:
                blocks.append((self._sheet(lay.events[eid], sid_of), shown))
        paper = p.prompts == "paper"
        ask_pred = prompts.paper_event_prediction if paper else prompts.event_prediction
        fixed = p.prompt_budget == "fixed"
        calls = pack(blocks, p.predict_chars if fixed else chars(llm, "predict", query))
        preds = await asyncio.gather(
            *(ask(llm, ask_pred(query, c), "predict", room(llm, c)) for c in calls)
        )
        for pred in preds:
            for sid in getattr(pred, "ids", []):
                got = short.get(sid.strip().upper())
                if got is not None:
                    t = got
                    owner = next(e for e, _ in anchors if t in lay.events[e].turn_ids)
                    cands.setdefault(t, Candidate(linked[t])).events.append(owner)

    async def _filtered(
        self, llm: LLMClient, lay: Layers, query: str, cands: list[Candidate], k: int
    ) -> list[Candidate]:
        """The evidence filter over the first ``max_candidates``: the set it keeps,
        whatever its size (Eq. 8: ``k`` does not cut it); the first ``k`` in order when
        every filter call failed."""
        p = self.params
        paper = p.prompts == "paper"
        pool = cands[: p.max_candidates]
        ids = {f"T{i}": c for i, c in enumerate(pool, start=1)}
        shown = [
            (sid, cut(stamp(c.ep) if paper else self._with_dates(lay, c.ep), p.shown_chars))
            for sid, c in ids.items()
        ]
        ask_filter = prompts.paper_evidence_filter if paper else prompts.evidence_filter
        whole = p.prompt_budget == "fixed"  # one filter prompt
        parts = split(shown, None if whole else chars(llm, "filter", query))
        kept = await asyncio.gather(
            *(
                ask(
                    llm,
                    ask_filter(query, part),
                    "filter",
                    list_reply_tokens(
                        [sid for sid, _ in part], llm.budgets.tokens(prompts.STAGES["filter"])
                    ),
                )
                for part in parts
            )
        )
        answered = [r for r in kept if isinstance(r, prompts.Selection)]
        if not answered:
            return pool[:k]
        said = [s.strip().upper() for r in answered for s in r.ids]
        picked = [ids[s] for s in said if s in ids]
        return list({id(c): c for c in picked}.values()) or pool[:1]

    def _sheet(self, event: Event, sid_of: dict[str, str]) -> str:
        """An event as prediction reads it: its summary, then its fact sheet's latest
        lines, each naming the shown turns it comes from."""
        lines = []
        n = self.params.sheet_lines
        whole = n is None
        for f in event.facts if whole else event.facts[-n:] if n else []:
            refs = ", ".join(sid_of[t] for t in f.turns if t in sid_of)
            when = f"{f.when}: " if f.when else ""
            text = f.text if whole else f.text[:160]
            lines.append(f"- {when}{text}" + (f" ({refs})" if refs else ""))
        return event.summary + ("\nFacts:\n" + "\n".join(lines) if lines else "")

    def _profiled(
        self,
        ctx: Context,
        lay: Layers,
        namespace: str,
        texts: list[str],
        filters: SearchFilters | None,
    ) -> list[Episode]:
        """Profile retrieval: turns whose profile key is about a person the query names
        and whose attribute shares a stem with the query or its keywords (most shared
        first, then the latest), at most ``k_profile``."""
        profiles = lay.profiles()
        if not profiles:
            return []
        said = " ".join(texts)
        qwords = set(nlp.words(said))  # folded, possessive off: "Evan's car" names Evan
        qstems = set(stems(said))
        scored: list[tuple[int, int, str]] = []
        for person, keys in profiles.items():
            if not set(nlp.words(person)) <= qwords:
                continue
            for order, (turn, _, attr) in enumerate(keys):
                shared = len(attr & qstems)
                if shared:
                    scored.append((shared, order, turn))
        ranked = [t for _, _, t in sorted(scored, key=lambda x: (-x[0], -x[1]))]
        ids = list(dict.fromkeys(ranked))[: self.params.k_profile]
        eps = _admitted(ctx, namespace, ids, filters)
        return [eps[i] for i in ids if i in eps]

    @staticmethod
    def _expand(
        ctx: Context,
        lay: Layers,
        namespace: str,
        cands: dict[str, Candidate],
        filters: SearchFilters | None,
    ) -> None:
        """Link expansion: each candidate brings the turns it links to and the turns
        that link to it (the analysis' direct links), after the candidates found so far."""
        pairs = [(c.ep.id, t) for c in list(cands.values()) for t in lay.linked_turns(c.ep.id)]
        new = list(dict.fromkeys(t for _, t in pairs if t not in cands))
        eps = _admitted(ctx, namespace, new, filters)
        for src, t in pairs:
            if t in eps:
                cands.setdefault(t, Candidate(eps[t])).via.append(f"link {src[:8]}")

    @staticmethod
    def _with_dates(lay: Layers, ep: Episode) -> str:
        note = lay.notes.get(ep.id)
        dates = "; ".join(f"{d['phrase']} = {d['date']}" for d in note.dates) if note else ""
        return stamp(ep) + (f" ({dates})" if dates else "")

    # hits -------------------------------------------------------------------------------
    @staticmethod
    def _hits(chosen: list[Candidate]) -> list[Hit]:
        out = []
        for c in chosen:
            routes = [f"semantic#{c.semantic}"] if c.semantic else []
            routes += [f"event {e[:8]}" for e in c.events] + c.via
            span = Span(episode=c.ep.id, start=0, end=len(c.ep.text))
            hit = documents.episode_hit(c.ep, c.score, routes, [span])
            hit.metadata["events"] = list(c.events)
            out.append(hit)
        return out


class PaperRoute(GuidedRoute):
    """The same route over the notes and events of the builder ``higmem-paper``; the
    ``higmem-paper`` recipe sets the paper's retrieval (:data:`~.recipe.PAPER_ROUTE`)."""

    name = "higmem-paper"
    builder = PAPER_BUILDER
    needs = (PAPER_BUILDER,)


class _Scorer:
    """The heuristic query-to-turn score, memoised per turn for one query: cosine, plus
    the IDF-weighted share of the query's stemmed terms the turn holds, plus
    ``speaker_bonus`` for a turn of a person the query names; the sum is raised by
    System-1's date factor (1 + ``date_boost``) when the query names a period (May
    2023, 2022) and the turn was said in it or resolves a date phrase into it."""

    def __init__(
        self,
        route: GuidedRoute,
        ctx: Context,
        lay: Layers,
        qvec: np.ndarray,
        terms: list[str],
        named: set[str],
        period: tuple[float, float] | None,
    ) -> None:
        self.route, self.ctx, self.lay = route, ctx, lay
        self.qvec, self.terms, self.named, self.period = qvec, terms, named, period
        self.memo: dict[str, float] = {}

    def __call__(self, eps: list[Episode]) -> dict[str, float]:
        todo = list({e.id: e for e in eps if e.id not in self.memo}.values())
        if todo:
            p = self.route.params
            sims = self.route._turn_vecs(self.ctx, todo) @ self.qvec
            for e, sim in zip(todo, sims, strict=True):
                s = float(sim) + overlap(self.terms, turn_body(e), self.lay.idf)
                s += p.speaker_bonus * (e.speaker in self.named)
                if self.period and in_period(e, self.lay.notes.get(e.id), self.period):
                    s *= 1 + p.system1.date_boost
                self.memo[e.id] = s
        return {e.id: self.memo[e.id] for e in eps}


def _admitted(
    ctx: Context, namespace: str, ids: list[str], filters: SearchFilters | None
) -> dict[str, Episode]:
    """The stored episodes of ``ids`` that the search filters admit, by id."""
    eps = {e.id: e for e in ctx.store.get_episodes(namespace, ids)}
    if filters is not None and not filters.is_empty():
        eps = {i: e for i, e in eps.items() if filters.admits(e)}
    return eps
