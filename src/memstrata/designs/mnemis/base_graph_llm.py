"""Mnemis base graph builder, ``llm`` tier: the paper's section 2.1 pipeline.

Per episode, with the previous ``recent`` episodes as context: extract entity names,
reflect for missed ones, de-duplicate against the graph (candidates: the case-folded
name match, which is always offered, entities sharing a name word, and the nearest
name embeddings), write summary and tag, extract facts between the entities, reflect
for missed facts, and resolve each new fact against the valid facts sharing either of
its entities (same pair first, then the most recent): a duplicate adds provenance, a
contradiction sets the old fact's ``invalid_at`` (nothing is deleted).

A stage that fails (backend down, output still invalid after retries) is counted and
the episode is left unmarked, so the next ``build`` retries it; the raw episode is safe.
"""

from __future__ import annotations

from collections import deque
from datetime import UTC, datetime

import numpy as np

from memstrata.designs.mnemis import prompts
from memstrata.designs.mnemis.base_graph import BaseGraphParams
from memstrata.designs.mnemis.extract import name_key
from memstrata.designs.mnemis.graph import Graph
from memstrata.embed.cache import embed_cached
from memstrata.errors import MemstrataError
from memstrata.llm.base import LLMClient
from memstrata.models import Entity, Episode, Fact, Span, aware
from memstrata.retrieval import when
from memstrata.retrieval.record_index import matvec
from memstrata.retrieval.text import content_terms


def _line(ep: Episode) -> str:
    when = ep.occurred_at.strftime("%Y-%m-%d %H:%M") if ep.occurred_at else ""
    who = f"{ep.speaker}: " if ep.speaker else ""
    return f"[{when}] {who}{ep.text}" if when else f"{who}{ep.text}"


def _span(ep: Episode, needle: str) -> Span:
    at = ep.text.casefold().find(needle.casefold())
    if at < 0:
        return Span(episode=ep.id, start=0, end=len(ep.text))
    return Span(episode=ep.id, start=at, end=at + len(needle))


def _date(value: str | None, like: datetime | None = None) -> datetime | None:
    """A date the model wrote, read in the time zone of ``like`` (the episode's time),
    so it compares with the episode's own dates whether or not it carries an offset. ISO
    first; a date in words ("7 May 2023", "May 2023") is read by parsing it, as its first
    day written without an offset; anything else, or a relative phrase, is no date."""
    if not value:
        return None
    try:
        out = datetime.fromisoformat(value)
    except ValueError:
        found = when.periods(value) if len(value) <= 60 else []
        if len(found) != 1:
            return None
        out = datetime.fromtimestamp(found[0].start, UTC).replace(tzinfo=None)
    if like is None or (out.tzinfo is None) == (like.tzinfo is None):
        return out
    if like.tzinfo is None:  # naive episode times are UTC (see the store)
        return out.astimezone(UTC).replace(tzinfo=None)
    return out.replace(tzinfo=like.tzinfo)


class LLMBaseGraph:
    """The paper's extraction pipeline over an :class:`LLMClient`."""

    def __init__(
        self,
        graph: Graph,
        llm: LLMClient,
        params: BaseGraphParams | None = None,
        *,
        recent: int = 3,
        candidates: int = 4,
        candidate_cosine: float = 0.75,
    ) -> None:
        self.graph = graph
        self.llm = llm
        #: the model's schema bounds (a capable model's replies hold more facts)
        self.budgets = llm.budgets
        self.params = params or BaseGraphParams()
        self.recent: deque[str] = deque(maxlen=recent)
        self.candidates = candidates
        self.candidate_cosine = candidate_cosine
        self.failed: dict[str, str] = {}

    async def add(self, episodes: list[Episode]) -> list[str]:
        created: list[str] = []
        self.failed = {}
        for ep in episodes:
            try:
                created.extend(await self._episode(ep))
            except MemstrataError as exc:
                self.failed[ep.id] = str(exc)
            self.recent.append(_line(ep))
        return created

    async def _episode(self, ep: Episode) -> list[str]:
        current = _line(ep)
        recent = list(self.recent)
        found = await prompts.ask(
            self.llm, prompts.extract_entities(current, recent, self.budgets), "mnemis.entities"
        )
        assert isinstance(found, prompts.EntityNames)
        names = [n.strip() for n in found.names if n.strip()]
        missed = await prompts.ask(
            self.llm,
            prompts.reflect_entities(current, recent, names, self.budgets),
            "mnemis.entities_reflect",
        )
        assert isinstance(missed, prompts.EntityNames)
        names += [n.strip() for n in missed.names if n.strip()]
        if ep.speaker:
            names.append(ep.speaker)
        names = list(dict.fromkeys(names))
        ids, created = await self._resolve(ep, names)
        await self._attributes(ep, current, recent, ids)
        await self._facts(ep, current, recent, ids)
        return created

    async def _resolve(self, ep: Episode, names: list[str]) -> tuple[dict[str, str], list[str]]:
        """Map each name to an entity id, asking the LLM where candidates exist."""
        g = self.graph
        vecs = embed_cached(g.store, g.embedder, names) if names else np.zeros((0, 1))
        pool, matrix = g.entity_index()
        asks: list[tuple[str, list[tuple[int, str]]]] = []
        cand_ids: dict[str, list[str]] = {}
        for name, vec in zip(names, vecs, strict=True):
            ids: list[str] = []
            exact = g.by_key.get(name_key(name))
            if exact is not None:
                ids.append(exact)
            for w in content_terms(name):
                ids.extend(sorted(g.by_word.get(w, ()))[: self.candidates])
            if pool:
                sims = matvec(matrix, vec)
                for i in np.argsort(-sims)[: self.candidates]:
                    if sims[int(i)] >= self.candidate_cosine:
                        ids.append(pool[int(i)])
            ids = list(dict.fromkeys(ids))[: 2 * self.candidates]
            if ids:
                cand_ids[name] = ids
                asks.append((name, [(j, g.entities[e].name) for j, e in enumerate(ids)]))
        decided: dict[str, str] = {}
        if asks:
            answer = await prompts.ask(
                self.llm, prompts.dedupe_entities(asks, self.budgets), "mnemis.dedupe"
            )
            assert isinstance(answer, prompts.Duplicates)
            for r in answer.resolutions:
                options = cand_ids.get(r.name) or []
                if 0 <= r.duplicate_of < len(options):
                    decided[r.name] = options[r.duplicate_of]
        out: dict[str, str] = {}
        created: list[str] = []
        for name in names:
            eid = decided.get(name)
            if eid is None:
                kind = "speaker" if name == ep.speaker else "entity"
                ent = g.add_entity(
                    Entity(namespace=g.namespace, name=name, entity_type=kind, tags=[kind])
                )
                eid = ent.id
                created.append(eid)
            else:
                g.alias(name_key(name), eid)
                ent = g.entities[eid]
                if name != ent.name and name not in ent.aliases:
                    ent.aliases.append(name)
            g.add_span(g.entities[eid], _span(ep, name))
            g.touch(g.entities[eid])
            out[name] = eid
        return out, created

    async def _attributes(
        self, ep: Episode, current: str, recent: list[str], ids: dict[str, str]
    ) -> None:
        g = self.graph
        if not ids:
            return
        listed = [(n, g.entities[e].summary) for n, e in ids.items()]
        answer = await prompts.ask(
            self.llm,
            prompts.entity_attributes(current, recent, listed, self.budgets),
            "mnemis.attributes",
        )
        assert isinstance(answer, prompts.Attributes)
        for a in answer.entities:
            eid = ids.get(a.name)
            if eid is None:
                continue
            ent = g.entities[eid]
            if a.summary.strip():
                ent.summary = a.summary.strip()[: self.params.summary_chars]
            tags = [t.strip() for t in a.tag if t.strip()][:5]
            if tags:
                ent.tags = tags
            g.touch(ent)

    async def _facts(
        self, ep: Episode, current: str, recent: list[str], ids: dict[str, str]
    ) -> None:
        g = self.graph
        if len(ids) < 2:
            return
        names = list(ids)
        when = ep.occurred_at.isoformat() if ep.occurred_at else "an unknown time"
        first = await prompts.ask(
            self.llm,
            prompts.extract_facts(current, recent, names, when, self.budgets),
            "mnemis.facts",
        )
        assert isinstance(first, prompts.Facts)
        more = await prompts.ask(
            self.llm,
            prompts.reflect_facts(current, names, [f.fact for f in first.facts], self.budgets),
            "mnemis.facts_reflect",
        )
        assert isinstance(more, prompts.Facts)
        lowered = {n.casefold(): e for n, e in ids.items()}
        new: list[Fact] = []
        for f in [*first.facts, *more.facts]:
            s, t = lowered.get(f.source.casefold()), lowered.get(f.target.casefold())
            if s is None or t is None or s == t or not f.fact.strip():
                continue
            new.append(
                Fact(
                    namespace=g.namespace,
                    subject_id=s,
                    object_id=t,
                    entity_ids=[s, t],
                    relation=f.relation,
                    fact=f.fact.strip(),
                    valid_at=_date(f.valid_at, ep.occurred_at) or ep.occurred_at,
                    invalid_at=_date(f.invalid_at, ep.occurred_at),
                    sources=[Span(episode=ep.id, start=0, end=len(ep.text))],
                )
            )
        if not new:
            return
        existing = self._related(new)
        dup: dict[int, list[str]] = {}
        contra: dict[int, list[str]] = {}
        if existing:
            answer = await prompts.ask(
                self.llm,
                prompts.resolve_facts(
                    [f.fact for f in new], [g.facts[e].fact for e in existing], self.budgets
                ),
                "mnemis.facts_resolve",
            )
            assert isinstance(answer, prompts.FactResolutions)
            for r in answer.resolutions:
                if 0 <= r.new_fact < len(new):
                    dup[r.new_fact] = [
                        existing[i] for i in r.duplicate_of if 0 <= i < len(existing)
                    ]
                    contra[r.new_fact] = [
                        existing[i] for i in r.contradicts if 0 <= i < len(existing)
                    ]
        for i, fact in enumerate(new):
            if dup.get(i):
                old = g.facts[dup[i][0]]
                g.add_span(old, fact.sources[0])
                g.touch(old)
                continue
            for old_id in contra.get(i, []):
                old = g.facts[old_id]
                if old.invalid_at is None:
                    old.invalid_at = fact.valid_at or ep.occurred_at or datetime.now(UTC)
                    old.replaced_by = [*old.replaced_by, fact.id]
                    g.touch(old)
            g.add_fact(fact)

    def _related(self, new: list[Fact], limit: int = 20) -> list[str]:
        """Valid facts sharing either entity with a new fact (a changed job shares only
        the person with the old one): the same pair first, then the most recent."""
        g = self.graph
        pair: dict[str, None] = {}
        either: dict[str, None] = {}
        for f in new:
            a, b = g.facts_of.get(f.subject_id, set()), g.facts_of.get(f.object_id, set())
            for fid in a & b:
                pair.setdefault(fid, None)
            for fid in a | b:
                either.setdefault(fid, None)
        valid = [f for f in either if g.facts[f].invalid_at is None and f not in pair]
        valid.sort(key=lambda f: _when(g.facts[f]), reverse=True)
        same = [f for f in pair if g.facts[f].invalid_at is None]
        return (same + valid)[:limit]


def _when(fact: Fact) -> float:
    return aware(fact.valid_at).timestamp() if fact.valid_at else 0.0
