"""The Memorize pipeline: episodes into objects, triplets and theses, and outdated ones out.

Both tiers write the same records through :class:`Memorizer`:

* ``heuristic``: :func:`memstrata.designs.personalai.extract.extract`; outdated triplets
  are those of a statement a later one supersedes, in a slot the statements show to hold
  one value (:mod:`memstrata.designs.personalai.supersede`).
* ``llm``: the appendix A prompts (theses with their nodes, then simple triplets); then
  section 3's outdated-knowledge step: the new items' objects are matched to existing
  object nodes, a breadth-first walk (``bfs_depth`` hops) over their connections and
  hyperconnections collects the existing triplets and theses around them, and the
  appendix B prompts say which of those the new ones replace.

A replaced triplet or thesis is never deleted (the paper deletes it): it gets
``invalid_at`` and ``replaced_by`` (the ids of its replacements), leaves the traversal
graph, and stays in the store as history.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memstrata.designs.personalai.extract import Mention, extract
from memstrata.designs.personalai.graph import OBJECT, PAGraph, name_key, reply_key, text_key
from memstrata.designs.personalai.prompts import (
    Output,
    Replacements,
    Style,
    Theses,
    Triplets,
    extract_theses,
    extract_triplets,
    replace_theses,
    replace_triplets,
)
from memstrata.designs.personalai.records import Thesis
from memstrata.designs.personalai.replies import ask
from memstrata.designs.personalai.supersede import Outdated
from memstrata.llm.base import LLMClient
from memstrata.llm.types import LLMError
from memstrata.models import Entity, Episode, Fact, Span

STAGE = "personalai."


class MemorizeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: answer format asked of the model: JSON (grammar-constrained) or the paper's lines
    output: Output = "json"
    #: run the outdated-knowledge step at all
    replace_outdated: bool = True
    #: hops of the breadth-first walk from the matched objects (the paper gives none)
    bfs_depth: int = Field(default=1, ge=1, le=3)
    #: existing items shown to one replacement prompt at most (closest to the new first)
    max_existing: int = Field(default=30, ge=1)
    #: each call's completion budget; default: the model's (``personalai.memorize``,
    #: :mod:`memstrata.llm.budgets`)
    max_tokens: int | None = Field(default=None, ge=64)
    #: the prompts' wording: ours, or the paper's text of Tables 5, 7 and 8 (Table 6's
    #: is cut off in the paper, so the triplet prompt stays ours); the paper's asks for
    #: its line formats, so it needs ``output = "lines"``
    prompts: Style = "ours"

    @model_validator(mode="after")
    def _paper_lines(self) -> MemorizeParams:
        if self.prompts == "paper" and self.output != "lines":
            raise ValueError('the paper\'s prompts ask for its line formats: output = "lines"')
        return self


# Two names joined by "and" / "&" (each of one to three words), as name runs read them.
_AND = re.compile(r"(\S+(?: \S+){0,2}) (?:and|&) (\S+(?: \S+){0,2})")


def _find(text: str, needle: str) -> tuple[int, int] | None:
    m = re.search(re.escape(needle.strip()), text, re.IGNORECASE)
    return (m.start(), m.end()) if m else None


def triplet_line(graph: PAGraph, f: Fact) -> str:
    """``subject, relation, object``, the appendix B form of a triplet."""
    return f"{graph.objects[f.subject_id].name}, {f.relation}, {graph.objects[f.object_id].name}"


class Memorizer:
    """Folds episodes into one namespace's :class:`PAGraph`."""

    def __init__(self, graph: PAGraph, params: MemorizeParams | None = None) -> None:
        self.graph = graph
        self.params = params or MemorizeParams()
        self.replaced: int = 0
        #: replacement stages that failed: the extraction stands, the episode is retried
        self.stage_errors: list[str] = []

    # records ----------------------------------------------------------------------------
    def object(self, name: str, span: Span) -> Entity:
        g = self.graph
        key = name_key(name)
        oid = g.by_name.get(key)
        if oid is None:
            ent = Entity(namespace=g.namespace, name=name.strip(), entity_type=OBJECT)
            ent.sources.append(span)
            return g.add_object(ent)
        ent = g.objects[oid]
        if span not in ent.sources:
            ent.sources.append(span)
            g.touch(ent)
        return ent

    def thesis(self, text: str, object_ids: list[str], span: Span) -> Thesis:
        g = self.graph
        tid = g.by_thesis.get(text_key(text))
        if tid is not None:
            th = g.theses[tid]
            if span not in th.sources:
                th.sources.append(span)
            th.entity_ids = list(dict.fromkeys(th.entity_ids + object_ids))
            g.touch(th)
            return th
        th = Thesis(
            namespace=g.namespace, text=text.strip(), entity_ids=list(dict.fromkeys(object_ids))
        )
        th.sources.append(span)
        return g.add_thesis(th)

    def triplet(
        self, subj: Entity, relation: str, obj: Entity, span: Span, when: datetime | None = None
    ) -> Fact:
        """A triplet, valid from ``when`` (its episode's time), or the same one stated
        again (one more source)."""
        g = self.graph
        text = f"{subj.name} {relation} {obj.name}"
        fid = g.by_triplet.get(text_key(text))
        if fid is not None:
            fact = g.triplets[fid]
            if span not in fact.sources:
                fact.sources.append(span)
                g.touch(fact)
            return fact
        fact = Fact(
            namespace=g.namespace,
            subject_id=subj.id,
            object_id=obj.id,
            relation=relation.strip(),
            fact=text,
            entity_ids=[subj.id, obj.id],
            valid_at=when,
        )
        fact.sources.append(span)
        return g.add_triplet(fact)

    # heuristic tier ---------------------------------------------------------------------
    def heuristic(self, ep: Episode) -> None:
        for d in extract(ep.text, ep.speaker):
            objs = [
                [self.object(p.name, Span(episode=ep.id, start=p.start, end=p.end)) for p in parts]
                for parts in map(self.split_known, d.mentions)
            ]
            span = Span(episode=ep.id, start=d.start, end=d.end)
            self.thesis(d.text, [o.id for group in objs for o in group], span)
            for a, rel, b in d.triplets:
                for subj in objs[a]:
                    for obj in objs[b]:
                        if subj.id == obj.id:
                            continue
                        self.triplet(subj, rel, obj, span, ep.occurred_at)

    def heuristic_outdated(self, episodes: list[Episode]) -> None:
        """After a batch: what its statements supersede
        (:mod:`memstrata.designs.personalai.supersede`)."""
        if self.params.replace_outdated:
            outdated = Outdated(self.graph, self.object, self.triplet)
            outdated.apply(episodes)
            self.replaced += outdated.replaced

    def split_known(self, m: Mention) -> list[Mention]:
        """ "Alice and Bob" as two objects when both are objects already; a name run over
        "and" that is not two known objects stays one ("Kiss and Tell", a title)."""
        found = _AND.fullmatch(m.name)
        if found is None:
            return [m]
        left, right = found.group(1), found.group(2)
        if any(name_key(x) not in self.graph.by_name for x in (left, right)):
            return [m]
        at = m.start + found.start(2)
        return [Mention(left, m.start, m.start + len(left)), Mention(right, at, at + len(right))]

    # llm tier ---------------------------------------------------------------------------
    def budget(self, llm: LLMClient) -> int:
        """Each call's completion budget: ``max_tokens``, else the model's."""
        return self.params.max_tokens or llm.budgets.tokens(STAGE + "memorize")

    async def llm(self, ep: Episode, llm: LLMClient) -> None:
        """Appendix A extraction, then the outdated-knowledge step. A bad extraction
        answer raises before anything is added, so a failed episode leaves the graph as it
        was; a failed replacement step keeps the extraction and is noted in
        ``stage_errors`` (rerunning the episode adds nothing twice: records are keyed by
        their text and spans are not repeated)."""
        p = self.params
        budget = self.budget(llm)
        theses = await ask(
            llm,
            extract_theses(ep.text, p.output, p.prompts),
            Theses,
            p.output,
            STAGE + "theses",
            budget,
        )
        triplets = await ask(
            llm,
            extract_triplets(ep.text, p.output),
            Triplets,
            p.output,
            STAGE + "triplets",
            budget,
        )
        before = set(self.graph.objects)
        whole = Span(episode=ep.id, start=0, end=len(ep.text))

        def span_of(s: str) -> Span:
            found = _find(ep.text, s)
            return Span(episode=ep.id, start=found[0], end=found[1]) if found else whole

        new_theses: list[Thesis] = []
        new_facts: list[Fact] = []
        for item in theses.theses:
            if not item.thesis.strip():
                continue
            objs = [self.object(n, span_of(n)) for n in item.nodes if n.strip()]
            new_theses.append(self.thesis(item.thesis, [o.id for o in objs], span_of(item.thesis)))
        for t in triplets.triplets:
            if not (t.subject.strip() and t.object.strip() and t.relation.strip()):
                continue
            if t.subject.strip().lower() == "none" or t.object.strip().lower() == "none":
                continue
            s, o = (
                self.object(t.subject, span_of(t.subject)),
                self.object(t.object, span_of(t.object)),
            )
            if s.id != o.id:
                new_facts.append(self.triplet(s, t.relation, o, span_of(t.subject), ep.occurred_at))
        if p.replace_outdated:
            await self._outdated(llm, ep, before, new_theses, new_facts)

    def neighbourhood(self, seeds: set[str], depth: int) -> tuple[dict[str, int], dict[str, int]]:
        """Triplet and thesis ids met by a breadth-first walk of ``depth`` hops from the
        object ids ``seeds``, over simple relations and thesis hyperedges, each with the
        hop it was met at (1 for the seeds' own)."""
        g = self.graph
        seen, frontier = set(seeds), sorted(seeds)
        facts: dict[str, int] = {}
        theses: dict[str, int] = {}
        for hop in range(1, depth + 1):
            nxt: list[str] = []
            for oid in frontier:
                for fid in g.triplets_of.get(oid, ()):
                    f = g.triplets[fid]
                    if f.invalid_at is not None:
                        continue
                    facts.setdefault(fid, hop)
                    other = f.object_id if f.subject_id == oid else f.subject_id
                    if other not in seen:
                        seen.add(other)
                        nxt.append(other)
                for tid in g.theses_of.get(oid, ()):
                    th = g.theses[tid]
                    if th.invalid_at is not None:
                        continue
                    theses.setdefault(tid, hop)
                    for other in th.entity_ids:
                        if other not in seen:
                            seen.add(other)
                            nxt.append(other)
            frontier = nxt
        return facts, theses

    async def _outdated(
        self,
        llm: LLMClient,
        ep: Episode,
        before: set[str],
        new_theses: list[Thesis],
        new_facts: list[Fact],
    ) -> None:
        p, g = self.params, self.graph
        fresh = {r.id for r in new_theses} | {f.id for f in new_facts}
        seeds = {e for r in new_theses for e in r.entity_ids} | {
            e for f in new_facts for e in (f.subject_id, f.object_id)
        }
        facts, theses = self.neighbourhood(seeds & before, p.bfs_depth)
        new_words = [set(reply_key(triplet_line(g, f)).split()) for f in new_facts] + [
            set(reply_key(t.text).split()) for t in new_theses
        ]

        def closest(ids: dict[str, int], label: Callable[[str], str]) -> list[str]:
            """Nearest in the walk first, then the most words shared with a new item:
            the cut at ``max_existing`` keeps what the new items most likely replace."""

            def shared(i: str) -> int:
                words = set(reply_key(label(i)).split())
                return max((len(words & w) for w in new_words), default=0)

            return sorted((i for i in ids if i not in fresh), key=lambda i: (ids[i], -shared(i), i))

        old_facts = [
            g.triplets[f] for f in closest(facts, lambda f: triplet_line(g, g.triplets[f]))
        ][: p.max_existing]
        old_theses = [g.theses[t] for t in closest(theses, lambda t: g.theses[t].text)][
            : p.max_existing
        ]
        if old_theses and new_theses:
            await self._replace(llm, "theses", old_theses, new_theses, ep)
        if old_facts and new_facts:
            await self._replace(llm, "triplets", old_facts, new_facts, ep)

    async def _replace(
        self,
        llm: LLMClient,
        what: Literal["theses", "triplets"],
        old: list[Thesis] | list[Fact],
        new: list[Thesis] | list[Fact],
        ep: Episode,
    ) -> None:
        p, g = self.params, self.graph

        def label(r: Thesis | Fact) -> str:
            return r.text if isinstance(r, Thesis) else triplet_line(g, r)

        old_by = {reply_key(label(r)): r for r in old}
        new_by = {reply_key(label(r)): r for r in new}
        make = replace_theses if what == "theses" else replace_triplets
        prompt = make([label(r) for r in old], [label(r) for r in new], p.output, p.prompts)
        stage = STAGE + f"replace_{what}"
        try:
            answer = await ask(llm, prompt, Replacements, p.output, stage, self.budget(llm))
        except LLMError as exc:
            self.stage_errors.append(f"{stage}: {type(exc).__name__}: {exc}")
            return
        for rep in answer.replacements:
            was, now = old_by.get(reply_key(rep.outdated)), new_by.get(reply_key(rep.new))
            if was is not None and now is not None and was.invalid_at is None:
                g.retire(was, now.id, ep.occurred_at or ep.created_at)
                self.replaced += 1
