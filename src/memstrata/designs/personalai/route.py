"""The PersonalAI query pipeline (section 3, Figure 2) as one route.

1. **Query parser**: the question's key entities: the appendix C prompt on the ``llm``
   tier; on the heuristic tier, its names (capitalised runs, quoted titles) and content
   terms.
2. **Knowledge comparator**: entities to object nodes, by name and by embedding
   (:func:`memstrata.designs.personalai.retrieve.compare`).
3. **Graph triplets retriever**: A*, WaterCircles, BeamSearch, or any union of them
   (Mixed), each with its own parameters and node-type restrictions; then the
   **triplets filter** keeps the ``top_n`` items most similar to the question.
4. Hits: episodes (each item's episode, or the episodes its triplet or thesis rests on,
   in the filter's order), theses and triplets, each with its sources and the path that
   found it (``Hit.routes``, shown by ``--explain``; ``Hit.metadata["path"]``). With
   ``hits = "items"`` (``personalai-paper``), the filter's items themselves in its
   order, nothing added.

The QA generator (appendix C) is the design's answerer, :mod:`.answer`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memstrata.designs.personalai.astar import AStarParams, astar
from memstrata.designs.personalai.beam_search import BeamSearchParams, beam_search
from memstrata.designs.personalai.builder import BUILDER, graph_cache
from memstrata.designs.personalai.extract import name_mentions
from memstrata.designs.personalai.graph import PAGraph, Topology
from memstrata.designs.personalai.prompts import KeyEntities, Output, Style, key_entities
from memstrata.designs.personalai.replies import ask
from memstrata.designs.personalai.retrieve import (
    ComparatorParams,
    Item,
    Query,
    Retriever,
    banned_types,
    compare,
    dedupe,
    item_text,
    mixed,
    triplet_filter,
)
from memstrata.designs.personalai.watercircles import WaterCirclesParams, prune, watercircles
from memstrata.engine.contracts import Context, Route
from memstrata.llm.base import LLMClient
from memstrata.llm.types import LLMError
from memstrata.models import Hit, Span
from memstrata.retrieval import documents
from memstrata.retrieval.text import content_terms, plain, stem, words
from memstrata.store.base import SearchFilters

STAGE = "personalai.query_entities"


class PersonalAIParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: the retrievers to run; several make the Mixed retriever (their union)
    retrievers: list[Retriever] = Field(
        default_factory=lambda: list[Retriever](["beam"]), min_length=1
    )
    astar: AStarParams = Field(default_factory=AStarParams)
    watercircles: WaterCirclesParams = Field(default_factory=WaterCirclesParams)
    beam: BeamSearchParams = Field(default_factory=BeamSearchParams)
    comparator: ComparatorParams = Field(default_factory=ComparatorParams)
    #: the triplets filter's N: items kept, most similar to the question first
    top_n: int = Field(default=40, ge=1)
    #: format of the llm tier's entity-parser answer
    output: Output = "json"
    #: the entity parser's wording: ours, or Table 9's text (which needs ``output =
    #: "lines"``: it asks for "a | b | c")
    prompts: Style = "ours"
    #: keep only the model's entities that the question names (:func:`named_in`); the
    #: paper takes the parser's entities as they come
    check_entities: bool = True
    #: the entity parser's completion budget; None: the model's budget of the query
    #: pipeline (``personalai.qa``, :mod:`memstrata.llm.budgets`)
    entity_tokens: int | None = Field(default=200, ge=16)
    #: what the hits are: ``episodes_first``, the episodes the kept items rest on, then
    #: the theses and triplets (ours); ``items``, the filtered items themselves in the
    #: filter's order, an episodic item as its episode (section 3: the QA generator
    #: reads the filtered triplets)
    hits: Literal["episodes_first", "items"] = "episodes_first"

    @model_validator(mode="after")
    def _paper_lines(self) -> PersonalAIParams:
        if self.prompts == "paper" and self.output != "lines":
            raise ValueError('Table 9 asks for its line format: output = "lines"')
        return self


def named_in(question: str, entities: list[str]) -> list[str]:
    """The entities the question names: every word of one is a word of the question (by
    stem, so "devices" names "device"). Table 9 extracts key entities *from* the text; one
    that is not in it was made up, as a small model does by copying the prompt's examples
    ("Kayla", "Xiaomi 10Pro"), and would start the graph walk from a wrong node."""
    asked = {stem(plain(w)) for w in words(question)}
    return [e for e in entities if (own := words(e)) and all(stem(plain(w)) in asked for w in own)]


def heuristic_entities(question: str) -> list[str]:
    """The question's names (capitalised runs, quoted titles); its content terms when it
    names nothing. Appendix C asks for nouns and objects "like person, device, company";
    content words next to names made worse start nodes (docs/personalai.md)."""
    names = [m.name for m in name_mentions(question, 0, len(question))]
    return names or content_terms(question)


def node_label(graph: PAGraph, key: str) -> str:
    kind, rid = key[0], key[2:]
    if kind == "o":
        return graph.objects[rid].name
    if kind == "t":
        text = graph.theses[rid].text
        return "thesis “" + (text[:40] + "…" if len(text) > 40 else text) + "”"
    return f"episode {rid}"


def path_text(graph: PAGraph, item: Item) -> str:
    return f"{item.via}: " + " → ".join(node_label(graph, k) for k in item.path)


class PersonalAIRoute(Route[PersonalAIParams]):
    """Entity parsing, matching, graph traversal and the triplets filter."""

    name = "personalai"
    Params = PersonalAIParams
    needs = (BUILDER,)

    async def search(
        self,
        ctx: Context,
        namespace: str,
        queries: list[str],
        k: int,
        filters: SearchFilters | None = None,
    ) -> list[list[Hit]]:
        graph = await asyncio.to_thread(graph_cache(ctx).get, namespace)
        if not graph.objects:
            return [[] for _ in queries]
        topo = await asyncio.to_thread(graph.topology)
        await asyncio.to_thread(topo.vectors)
        llm = ctx.llm.scoped(namespace=namespace) if ctx.tier == "llm" and ctx.llm else None
        qvecs = await asyncio.to_thread(ctx.embedder.embed, queries)
        out = []
        for query, qvec in zip(queries, qvecs, strict=True):
            entities = await self.entities(query, llm)
            hits = await asyncio.to_thread(self.one, graph, topo, query, qvec, entities, k)
            if filters is not None and not filters.is_empty():
                hits = self._filtered(ctx, namespace, hits, filters)
            out.append(hits)
        return out

    async def entities(self, question: str, llm: LLMClient | None) -> list[str]:
        """Key entities of the question; the heuristic parser if the model fails or
        names nothing the question names (:func:`named_in`)."""
        if llm is None:
            return heuristic_entities(question)
        p = self.params
        try:
            answer = await ask(
                llm,
                key_entities(question, p.output, p.prompts),
                KeyEntities,
                p.output,
                STAGE,
                p.entity_tokens or llm.budgets.tokens("personalai.qa"),
            )
        except LLMError:
            return heuristic_entities(question)
        found = [e.strip() for e in answer.entities if e.strip()]
        if p.check_entities:
            found = named_in(question, found)
        return found or heuristic_entities(question)

    def runs(self) -> list[Callable[[Query], list[Item]]]:
        p = self.params
        table: dict[str, Callable[[Query], list[Item]]] = {
            "astar": lambda q: astar(_restricted(q, p.astar.restrict), p.astar),
            "watercircles": lambda q: watercircles(
                _restricted(q, p.watercircles.restrict), p.watercircles
            ),
            "beam": lambda q: beam_search(_restricted(q, p.beam.restrict), p.beam),
        }
        return [table[r] for r in dict.fromkeys(p.retrievers)]

    def retrieve(
        self, graph: PAGraph, topo: Topology, question: str, qvec: np.ndarray, entities: list[str]
    ) -> tuple[Query, list[tuple[Item, float]]]:
        """Comparator, retrievers and filter: the kept items with their similarity."""
        starts = compare(graph, topo, entities, self.params.comparator)
        q = Query(question, np.asarray(qvec, dtype=np.float32), starts, topo)
        if not starts:
            return q, []
        items = dedupe(graph, mixed(self.runs(), q))
        return q, triplet_filter(graph, q, items, self.params.top_n)

    def one(
        self,
        graph: PAGraph,
        topo: Topology,
        question: str,
        qvec: np.ndarray,
        entities: list[str],
        k: int,
    ) -> list[Hit]:
        _, kept = self.retrieve(graph, topo, question, qvec, entities)
        if self.params.hits == "items":
            return self.items(graph, kept[:k], entities)
        wc = self.params.watercircles
        episodes: dict[str, tuple[float, list[str], list[Span]]] = {}
        hits: list[Hit] = []
        for item, sim in kept:
            how = path_text(graph, item)
            if item.kind == "episodic":
                episodes.setdefault(item.rid, (sim, [how], []))
                continue
            rec: Any = graph.triplets[item.rid] if item.kind == "simple" else graph.theses[item.rid]
            sources = list(dict.fromkeys(s.episode for s in rec.sources))
            for ep in sources:
                spans = [s for s in rec.sources if s.episode == ep]
                episodes.setdefault(ep, (sim, [how], spans))
            text = item_text(graph, item)
            if item.via == "watercircles" and wc.do_text_pruning and item.kind == "hyper":
                text = prune(text, entities)
            hits.append(
                Hit(
                    kind="fact" if item.kind == "simple" else "thesis",
                    id=item.rid,
                    text=text,
                    score=round(sim, 6),
                    sources=sources,
                    spans=list(rec.sources),
                    routes=[how],
                    metadata={"path": item.path, "retriever": item.via},
                )
            )
        eps = list(episodes)[:k]
        found = {e.id: e for e in graph.store.get_episodes(graph.namespace, eps)}
        ep_hits = []
        for e in eps:
            if e not in found:
                continue
            sim, found_by, spans = episodes[e]
            h = documents.episode_hit(found[e], sim, routes=found_by, spans=spans)
            if wc.do_text_pruning and found_by[0].startswith("watercircles"):
                h.text = prune(h.text, entities)
            ep_hits.append(h)
        return ep_hits + hits

    def items(
        self, graph: PAGraph, kept: list[tuple[Item, float]], entities: list[str]
    ) -> list[Hit]:
        """The filtered items as hits, in the filter's order: a triplet as a fact, a
        thesis as a thesis, an episodic item as its episode; nothing added."""
        wc = self.params.watercircles
        ids = [item.rid for item, _ in kept if item.kind == "episodic"]
        found = {e.id: e for e in graph.store.get_episodes(graph.namespace, ids)}
        hits: list[Hit] = []
        for item, sim in kept:
            how = path_text(graph, item)
            pruned = item.via == "watercircles" and wc.do_text_pruning
            if item.kind == "episodic":
                if item.rid in found:
                    h = documents.episode_hit(found[item.rid], sim, routes=[how])
                    h.metadata = {**h.metadata, "path": item.path, "retriever": item.via}
                    if pruned:
                        h.text = prune(h.text, entities)
                    hits.append(h)
                continue
            rec: Any = graph.triplets[item.rid] if item.kind == "simple" else graph.theses[item.rid]
            text = item_text(graph, item)
            hits.append(
                Hit(
                    kind="fact" if item.kind == "simple" else "thesis",
                    id=item.rid,
                    text=prune(text, entities) if pruned and item.kind == "hyper" else text,
                    score=round(sim, 6),
                    sources=list(dict.fromkeys(s.episode for s in rec.sources)),
                    spans=list(rec.sources),
                    routes=[how],
                    metadata={"path": item.path, "retriever": item.via},
                )
            )
        return hits

    @staticmethod
    def _filtered(
        ctx: Context, namespace: str, hits: list[Hit], filters: SearchFilters
    ) -> list[Hit]:
        ids = list(dict.fromkeys(s for h in hits for s in h.sources))
        ok = {e.id for e in ctx.store.get_episodes(namespace, ids) if filters.admits(e)}
        out = []
        for h in hits:
            kept = [s for s in h.sources if s in ok]
            if kept:
                h.sources = kept
                out.append(h)
        return out


def _restricted(q: Query, restrict: str) -> Query:
    if not restrict:
        return q
    return Query(q.text, q.vector, q.starts, q.topo, q.banned | banned_types(restrict), q.visited)
