"""The HiGMem builder (section 3.2): per new turn, turn analysis, then event affiliation
and the adaptive update, batch by batch, both tiers.

For each turn, in order: the ``m`` previous turns of its session are its window; the
analysis makes a :class:`~memstrata.models.TurnNote` (a derived record citing the turn,
the episode itself untouched); the analysed turn is embedded and compared with the
events (Eq. 3); the turn joins a subset of the candidates or starts a new event (Eq. 4);
each joined event below τ linked turns is refreshed whole, one at or above τ gets the
new fact appended; the links are added both ways (Eq. 5).

On the ``llm`` tier an episode whose calls fail is undone in memory (its note and every
event it touched) and reported failed; the engine retries it later.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memstrata import nlp
from memstrata.designs.higmem import events as ev_rules
from memstrata.designs.higmem import prompts
from memstrata.designs.higmem.layer import (
    BUILDER,
    PAPER_BUILDER,
    LayerCache,
    Layers,
    layer_problems,
)
from memstrata.designs.higmem.notes import analyse, calendar_date, note_text, turn_body
from memstrata.designs.higmem.records import Event, EventFact, TurnNote, profile_key
from memstrata.engine.contracts import Builder, Context, StepResult, forgotten_on_failure
from memstrata.engine.removal import following, leaked, removed_terms
from memstrata.errors import ConfigError
from memstrata.llm.base import LLMClient
from memstrata.models import Episode, Span
from memstrata.retrieval import documents
from memstrata.retrieval.text import content_terms
from memstrata.store.base import Repairs


def layer_cache(ctx: Context) -> LayerCache:
    """The process-wide layers the builders, the routes, the answerers and ``show``
    share, per (builder, namespace)."""
    return ctx.state("higmem.layers", lambda: LayerCache(ctx.store, ctx.embedder))


def candidate_events(ranked: list[str], recent: list[str], k: int) -> list[str]:
    """The affiliation's ``k`` candidates: the ``k`` most similar events, where a recent
    event (one of the window's turns is in it) that is not among them takes the place of
    the least similar non-recent one. The prompt stays at ``k`` events however many
    events exist, and the one the conversation is in is always offered."""
    missing = [e for e in recent if e not in ranked]
    drop = max(0, len(ranked) + len(missing) - k)
    kept = list(ranked)
    for e in reversed(ranked):
        if drop == 0:
            break
        if e not in recent:
            kept.remove(e)
            drop -= 1
    return kept + missing


class HiGMemParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    window: int = Field(default=5, ge=0, description="m: earlier turns read by the analysis")
    tau: int = Field(default=10, ge=1, description="τ: refresh below, append at or above")
    k_event: int = Field(default=10, ge=1, description="candidate events per new turn")
    join_local: float = Field(default=0.5, description="heuristic: cosine to join a recent event")
    join_far: float = Field(default=0.75, description="heuristic: cosine to join any candidate")
    max_join: int = Field(default=2, ge=1, description="events a turn joins at most")
    backchannel_terms: int = Field(
        default=3, ge=0, description="heuristic: fewer content terms join the previous event"
    )
    prompts: Literal["ours", "paper"] = Field(
        default="ours",
        description="llm: our prompts, or the paper's (appendix C's analysis and "
        "affiliation, section 3.1's refresh; a new event is summarised by the refresh)",
    )


def _profile_keys(keys: Sequence[str]) -> list[str]:
    """The well-formed ``Person: attribute`` keys, once each."""
    pairs = [profile_key(k) for k in keys]
    return list(dict.fromkeys(f"{p[0]}: {p[1]}" for p in pairs if p))


def stamp(ep: Episode) -> str:
    """A turn as the prompts show it: ``[2023-05-08 13:56] Ana: text``."""
    when = f"[{ep.occurred_at:%Y-%m-%d %H:%M}] " if ep.occurred_at else ""
    return when + turn_body(ep)


class HiGMemBuilder(Builder[HiGMemParams]):
    """Turn notes and events over the episodes, one turn at a time."""

    name = BUILDER
    kinds = ("turn_note", "event")
    Params = HiGMemParams
    stage_prefix = "higmem."

    async def update(self, ctx: Context, namespace: str, episodes: Sequence[Episode]) -> StepResult:
        cache = layer_cache(ctx)
        lay = await asyncio.to_thread(cache.get, self.name, namespace)
        batch = list(episodes)
        with forgotten_on_failure(cache.forget, self.name, namespace):
            windows = await asyncio.to_thread(self._windows, ctx, batch)
            if ctx.tier == "llm":
                if ctx.llm is None:
                    raise ConfigError(
                        "the llm tier needs an LLM; configure llm.kind or use --tier heuristic"
                    )
                failed: dict[str, str] = {}
                for ep in batch:
                    err = await self._turn_llm(ctx.llm, lay, ep, windows[ep.id])
                    if err:
                        failed[ep.id] = err
            else:
                failed = {}
                await asyncio.to_thread(self._heuristic, lay, batch, windows)
            keys = [ep.key for ep in batch if ep.id not in failed]
            await asyncio.to_thread(lay.flush, keys)
        return StepResult(failed=failed)

    def _windows(self, ctx: Context, batch: list[Episode]) -> dict[str, list[Episode]]:
        """The ``m`` earlier turns of each turn's session, oldest first."""
        m = self.params.window
        if not m:
            return {ep.id: [] for ep in batch}
        near = ctx.store.session_neighbours([ep.key for ep in batch], m)
        eps = ctx.store.episodes_by_key(sorted({k for ks in near.values() for k in ks}))
        out = {}
        for ep in batch:
            before = [eps[k] for k in near.get(ep.key, []) if k in eps and eps[k].seq < ep.seq]
            out[ep.id] = sorted(before, key=lambda e: e.seq)[-m:]
        return out

    # heuristic tier ---------------------------------------------------------------------
    def _heuristic(
        self, lay: Layers, batch: list[Episode], windows: dict[str, list[Episode]]
    ) -> None:
        p = self.params
        # one pass of the pipeline for the batch and the windows
        nlp.analyse(list({e.text: None for ep in batch for e in [*windows[ep.id], ep]}))
        for ep in batch:
            window = windows[ep.id]
            note = analyse(ep, window)
            lay.put_note(note)
            # the heuristic keywords are the turn's own words: the turn's stored vector
            # (a cache hit) stands for the analysed turn
            vec = lay.embed([documents.embed_text(ep.text, ep.speaker, ep.metadata)])[0]
            joins = ev_rules.affiliate(
                lay,
                vec,
                window,
                ep,
                k_event=p.k_event,
                join_local=p.join_local,
                join_far=p.join_far,
                max_join=p.max_join,
                backchannel_terms=p.backchannel_terms,
            )
            if not joins:
                self._new_event(lay, ep, note, None)
            for eid in joins:
                event = lay.events[eid]
                if len(event.turn_ids) < p.tau:
                    turns = self._turns(lay, event) + [ep]
                    event.summary, event.facts = ev_rules.refresh(lay, turns)
                    lay.embed_events([eid])
                else:
                    event.facts.append(ev_rules.fact_of(ep, note))
                lay.link(event, ep)

    def _turns(self, lay: Layers, event: Event) -> list[Episode]:
        got = {e.id: e for e in lay.store.get_episodes(lay.namespace, event.turn_ids)}
        return [got[t] for t in event.turn_ids if t in got]

    def _new_event(self, lay: Layers, ep: Episode, note: TurnNote, fact: EventFact | None) -> None:
        """``NEW_EVENT``: the heuristic tier summarises the turn extractively; the llm
        tier starts the event from the analysis' fact (no extra call)."""
        summary = fact.text if fact is not None else ev_rules.summary_of(lay, [ep])
        fact = fact or ev_rules.fact_of(ep, note)
        event = Event(namespace=lay.namespace, summary=summary or fact.text, facts=[fact])
        lay.put_event(event)
        lay.link(event, ep)
        lay.embed_events([event.id])

    # llm tier ---------------------------------------------------------------------------
    async def _turn_llm(
        self, llm: LLMClient, lay: Layers, ep: Episode, window: list[Episode]
    ) -> str | None:
        """One turn through the prompts; the error text when it failed (then undone)."""
        old_note = lay.notes.get(ep.id)
        saved: dict[str, Event | None] = {}
        try:
            note, fact = await self._analyse_llm(llm, ep, window)
            lay.put_note(note)
            vec = (await asyncio.to_thread(lay.embed, [note_text(ep, note)]))[0]
            joins = await self._affiliate_llm(llm, lay, vec, ep, window, note)
            saved = lay.snapshot(joins)
            if not joins:
                before = set(lay.events)
                self._new_event(lay, ep, note, fact)
                saved.update({e: None for e in set(lay.events) - before})
                if self.params.prompts == "paper":  # |E| = 1 < τ: a full refresh
                    (new,) = set(lay.events) - before
                    await self._sheet_llm(llm, lay, lay.events[new], [ep], "")
            for eid in joins:
                event = lay.events[eid]
                if len(event.turn_ids) < self.params.tau:
                    await self._refresh_llm(llm, lay, event, ep)
                else:
                    event.facts.append(fact)
                lay.link(event, ep)
        except Exception as exc:
            lay.restore(saved, ep.id)
            if old_note is not None:
                lay.put_note(old_note)
            else:
                lay.notes.pop(ep.id, None)
            return f"{type(exc).__name__}: {exc}"
        return None

    async def _analyse_llm(
        self, llm: LLMClient, ep: Episode, window: list[Episode]
    ) -> tuple[TurnNote, EventFact]:
        paper = self.params.prompts == "paper"
        ask = prompts.paper_turn_analysis if paper else prompts.turn_analysis
        messages, model = ask([stamp(w) for w in window], stamp(ep))
        reply = await llm.structured(
            messages,
            model,
            stage=prompts.STAGES["analysis"],
            max_tokens=llm.budgets.tokens(prompts.STAGES["analysis"]),
        )
        assert isinstance(reply, prompts.TurnAnalysis | prompts.PaperTurnAnalysis)
        dates = [
            {"phrase": d.phrase.strip(), "date": day}
            for d in getattr(reply, "dates", [])
            if d.phrase.strip() and (day := calendar_date(d.date)) is not None
        ]
        said = getattr(reply, "timestamp", "").strip()
        when = ep.occurred_at.isoformat() if ep.occurred_at else (said or None)
        shown = {f"W{i}": w.id for i, w in enumerate(window, start=1)}
        note = TurnNote(
            namespace=ep.namespace,
            turn_id=ep.id,
            keywords=[k.strip() for k in reply.keywords if k.strip()],
            tags=[t.strip() for t in reply.tags if t.strip()],
            context=reply.context.strip(),
            timestamp=when,
            dates=dates,
            profile=_profile_keys(reply.profile),
            links_to=list(
                dict.fromkeys(shown[w] for x in reply.links if (w := x.strip().upper()) in shown)
            ),
            sources=[Span(episode=ep.id, start=0, end=len(ep.text))],
        )
        base = ev_rules.fact_of(ep, note)
        text = getattr(reply, "fact", "").strip()
        fact = EventFact(text=text, when=base.when, turns=[ep.id]) if text else base
        return note, fact

    async def _affiliate_llm(
        self,
        llm: LLMClient,
        lay: Layers,
        vec: Any,
        ep: Episode,
        window: list[Episode],
        note: TurnNote,
    ) -> list[str]:
        k = self.params.k_event
        recent = list(dict.fromkeys(e for w in window for e in lay.events_of.get(w.id, [])))
        recent = [e for e in recent if e in lay.events][:k]
        cands = candidate_events([eid for eid, _ in lay.top_events(vec, k)], recent, k)
        if not cands:
            return []
        short = {f"E{i}": eid for i, eid in enumerate(cands, start=1)}
        shown = []
        for sid, eid in short.items():
            event = lay.events[eid]
            latest = "; ".join(f.text for f in event.facts[-2:])
            shown.append((sid, f"{event.summary} | latest: {latest}"[:400], eid in recent))
        turn = stamp(ep) + (f" (keywords: {', '.join(note.keywords)})" if note.keywords else "")
        if self.params.prompts == "paper":
            messages, model = prompts.paper_affiliation(turn, shown)
        else:
            messages, model = prompts.affiliation(turn, shown, self.params.max_join)
        reply = await llm.structured(
            messages,
            model,
            stage=prompts.STAGES["affiliation"],
            max_tokens=llm.budgets.tokens(prompts.STAGES["affiliation"]),
        )
        assert isinstance(reply, prompts.Affiliation)
        picked = [s.strip().upper() for s in reply.events]
        if prompts.NEW_EVENT in picked:
            return []
        return list(dict.fromkeys(short[s] for s in picked if s in short))[: self.params.max_join]

    async def _refresh_llm(self, llm: LLMClient, lay: Layers, event: Event, ep: Episode) -> None:
        turns = await asyncio.to_thread(self._turns, lay, event)
        turns.append(ep)
        await self._sheet_llm(llm, lay, event, turns, event.summary)

    async def _sheet_llm(
        self, llm: LLMClient, lay: Layers, event: Event, turns: list[Episode], summary: str
    ) -> None:
        """The event's summary and fact sheet from ``summary`` and ``turns`` (the refresh
        prompt; a repair passes no summary, so nothing removed is carried forward)."""
        short = {f"T{i}": t for i, t in enumerate(turns, start=1)}
        ask = (
            prompts.paper_event_refresh if self.params.prompts == "paper" else prompts.event_refresh
        )
        messages, model = ask(summary, [(sid, stamp(t)) for sid, t in short.items()])
        reply = await llm.structured(
            messages,
            model,
            stage=prompts.STAGES["refresh"],
            max_tokens=llm.budgets.tokens(prompts.STAGES["refresh"]),
        )
        assert isinstance(reply, prompts.EventSheet)
        if not reply.summary.strip():
            raise ValueError("the event refresh came back without a summary")
        event.summary = reply.summary.strip()
        event.facts = [
            EventFact(
                text=line.fact.strip(),
                when=calendar_date(line.when),
                turns=list(dict.fromkeys(short[t].id for t in line.turns if t in short)),
            )
            for line in reply.facts
            if line.fact.strip()
        ]
        await asyncio.to_thread(lay.embed_events, [event.id])

    # repairs ----------------------------------------------------------------------------
    async def repair(self, ctx: Context, namespace: str, work: Repairs) -> None:
        """Notes and events without the removed text. A removed turn's own note went with
        it; the ``m`` turns after it in its session read it in their window, so their
        notes are analysed again. Events that lost a turn, that hold one of those turns,
        or whose summary or fact sheet says a word only the removed text had are derived
        again from the turns they link (with no summary carried forward); an event left
        with no turn goes."""
        cache = layer_cache(ctx)
        cache.forget(self.name, namespace)
        lay = await asyncio.to_thread(cache.get, self.name, namespace)
        try:
            await self._repair(ctx, lay, work)
            await asyncio.to_thread(lay.flush)
        finally:
            cache.forget(self.name, namespace)

    async def _repair(self, ctx: Context, lay: Layers, work: Repairs) -> None:
        llm = ctx.llm if ctx.tier == "llm" else None
        in_sessions = [ep for ep in work.episodes if ep.session is not None]
        readers = await asyncio.to_thread(
            following, ctx.store, lay.namespace, in_sessions, self.params.window
        )
        readers = [ep for ep in readers if ep.id in lay.notes]
        windows = await asyncio.to_thread(self._windows, ctx, readers)
        for ep in readers:
            if llm is not None:
                note, _ = await self._analyse_llm(llm, ep, windows[ep.id])
            else:
                note = analyse(ep, windows[ep.id])
            note.id = lay.notes[ep.id].id
            lay.put_note(note)
        stale = {i for i, k in work.changed.items() if k == "event" and i in lay.events}
        stale.update(e for ep in readers for e in lay.events_of.get(ep.id, []))
        removed = removed_terms(work)
        for eid, event in lay.events.items():
            text = " ".join([event.summary, *(f.text for f in event.facts)])
            if eid not in stale and removed & set(content_terms(text)):
                turns = await asyncio.to_thread(self._turns, lay, event)
                if leaked(
                    text, removed, [t.text for t in turns] + [t.speaker or "" for t in turns]
                ):
                    stale.add(eid)
        for eid in sorted(stale):
            event = lay.events[eid]
            turns = await asyncio.to_thread(self._turns, lay, event)
            if not turns:
                lay.drop_event(eid)
            elif llm is not None:
                await self._sheet_llm(llm, lay, event, turns, "")
                lay.touch(eid)
            else:
                event.summary, event.facts = ev_rules.refresh(lay, turns)
                lay.embed_events([eid])
                lay.touch(eid)

    # reports ----------------------------------------------------------------------------
    async def rebuild(self, ctx: Context, namespace: str) -> None:
        await super().rebuild(ctx, namespace)
        layer_cache(ctx).forget(self.name, namespace)

    async def describe(self, ctx: Context, namespace: str) -> dict[str, Any]:
        lay = await asyncio.to_thread(layer_cache(ctx).get, self.name, namespace)
        return layer_stats(lay)

    async def check(self, ctx: Context, namespace: str) -> list[str]:
        lay = await asyncio.to_thread(layer_cache(ctx).get, self.name, namespace)
        return layer_problems(lay)


class HiGMemPaperBuilder(HiGMemBuilder):
    """The same steps under the builder ``higmem-paper``: the records it writes and reads
    are its own, apart from ``higmem``'s, so both recipes can hold their structures in
    one namespace. The ``higmem-paper`` recipe sets the paper's settings
    (:data:`~.recipe.PAPER_BUILD`)."""

    name = PAPER_BUILDER


def layer_stats(lay: Layers) -> dict[str, Any]:
    sizes = sorted(len(e.turn_ids) for e in lay.events.values())
    multi = sum(1 for eids in lay.events_of.values() if len(eids) > 1)
    return {
        "turn_notes": len(lay.notes),
        "events": len(sizes),
        "mean_turns_per_event": round(sum(sizes) / len(sizes), 2) if sizes else 0.0,
        "max_turns_per_event": sizes[-1] if sizes else 0,
        "single_turn_events": sum(1 for s in sizes if s == 1),
        "turns_in_several_events": multi,
        "dated_turns": sum(1 for n in lay.notes.values() if n.dates),
    }
