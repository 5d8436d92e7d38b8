"""MindGraph's reader mode: one long document, one question (``memstrata read``).

The document is the episode ``document`` of its own namespace (the generic
:mod:`memstrata.reading` puts it there). The question-aware graph is built over it
(heuristic tier: :func:`.heuristic.question_graph`; llm tier: :func:`.build.build_llm`)
and kept in that namespace as ``concept_node`` and ``concept_edge`` records tagged with
the graph's key, a hash of (question, tier, model, build parameters); the document's
hash is the namespace. A second run of the same question loads the graph instead of
building it; a new question on the same document reuses the stored document, its chunks
and its parse (heuristic tier, per process), and the LLM response cache. A header
record (``node_type="graph"``) keeps the graph's counters: chunks, rejected operations
and how every quote was located.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from bisect import bisect_left
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memstrata.designs.mindgraph.answer import (
    Outcome,
    compaction,
    evidence,
    first_prompt,
    tool_loop,
)
from memstrata.designs.mindgraph.communities import ReportCache
from memstrata.designs.mindgraph.graph import BUILDER, ConceptGraph, Edge, Node
from memstrata.designs.mindgraph.heuristic import VERSION, Sentence, parse, question_graph
from memstrata.designs.mindgraph.llm_build import build_llm, most_that_fit
from memstrata.designs.mindgraph.prompts import BUILD_STAGE
from memstrata.designs.mindgraph.records import ConceptEdge, ConceptNode
from memstrata.embed.cache import embed_cached
from memstrata.engine.contracts import Context, Reader, Reading
from memstrata.errors import ConfigError
from memstrata.llm.base import LLMClient, context_tokens
from memstrata.llm.types import LLMError, MemoryUsageSink
from memstrata.models import Episode, Span
from memstrata.retrieval.chunking import chunk_spans
from memstrata.retrieval.context import count_tokens
from memstrata.retrieval.system1 import DEFAULT_SYSTEM1, EpisodeRoute
from memstrata.retrieval.transcript import Turn, turns, turns_namespace

HEADER = "graph"


#: the smallest chunk a model's window cuts the build chunk to
MIN_CHUNK = 64


class ReaderParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chunk_tokens: int = Field(default=8192, ge=16, description="build chunk size (paper: 8,192)")
    max_rounds: int = Field(default=40, ge=1, description="tool rounds of the answer stage")
    window_chars: int = Field(default=1000, ge=100, description="lookup_source window")
    windows: int = Field(default=5, ge=1, description="heuristic answer: evidence windows")
    max_claims: int = Field(default=40, ge=1, description="heuristic build: claims kept")
    context: int = Field(default=1, ge=0, description="heuristic build: neighbours kept")
    dense_sentences: int = Field(
        default=5, ge=0, description="heuristic build: sentences a semantic search adds"
    )
    turn_places: int = Field(
        default=5,
        ge=0,
        description="heuristic, on a transcript: the turns the engine's System-1 search "
        "ranks first for the question; each brings its sentence closest to the question "
        "into the graph and its best claim into the windows' ranking",
    )
    turn_chars: int = Field(
        default=4000,
        ge=0,
        description="heuristic, on a transcript: a window covers the whole turn its node "
        "sits in when the turn is at most this long",
    )
    max_compaction: float | None = Field(
        default=0.15,
        gt=0,
        description="heuristic build: fewer claims until the first answer call is at most "
        "this share of the document (None: always max_claims; the share may pass 1, as "
        "the prompt of a short document is longer than the document)",
    )
    build_max_tokens: int | None = Field(
        default=None,
        ge=64,
        description="completion per build call; default: the model's (mindgraph.build)",
    )
    state_nodes: int | None = Field(
        default=None,
        ge=0,
        description="build: latest nodes shown (None: the whole graph, or as many of the "
        "latest as fit when the model states its context window)",
    )
    answer_max_tokens: int | None = Field(
        default=None,
        ge=64,
        description="completion per round; default: the model's (mindgraph.answer)",
    )


def _rid(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:32]


class MindGraphReader(Reader[ReaderParams]):
    name = "mindgraph"
    Params = ReaderParams

    def graph_key(self, question: str, ctx: Context) -> str:
        model = ctx.llm.backend.model if ctx.llm is not None else ""
        p = self.params
        heuristic = [
            VERSION,
            p.max_claims,
            p.context,
            p.dense_sentences,
            p.turn_places,
            p.max_compaction,
            ctx.embedder.model_id,
        ]
        build = [self.chunk_tokens(ctx)] + (heuristic if ctx.llm is None else [])
        raw = json.dumps([question.strip(), ctx.tier, model, build])
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:24]

    async def read(
        self,
        ctx: Context,
        namespace: str,
        document: Episode,
        question: str,
        *,
        graph_only: bool = False,
    ) -> Reading:
        if ctx.tier == "llm" and ctx.llm is None:
            raise ConfigError("the llm tier needs an LLM; configure llm.kind or use heuristic")
        text = document.text
        sink = MemoryUsageSink()
        llm = ctx.llm.scoped(namespace=namespace, usage=sink) if ctx.llm is not None else None
        key = self.graph_key(question, ctx)
        graph = await asyncio.to_thread(load_graph, ctx, namespace, key)
        cached = graph is not None
        failed = 0
        places = await asyncio.to_thread(self._places, ctx, namespace, document, question)
        if graph is None:
            graph, failed = await self._built(ctx, llm, document, question, places)
            await asyncio.to_thread(save_graph, ctx, namespace, key, document.id, graph, failed)
        counts = {**graph.counts(), "cached": cached, "key": key}
        counts["chunk_tokens"] = self.chunk_tokens(ctx)
        spans = {
            n.id: [Span(episode=document.id, start=n.start, end=n.end)]
            for n in graph.nodes.values()
            if n.start is not None and n.end is not None
        }
        reports = ReportCache(ctx.store, namespace, graph, spans, llm, question)
        if graph_only:  # the graph, and its subgraphs (reports made now if not yet)
            view = graph_view(graph, text)
            view["subgraphs"] = [s.__dict__ for s in await reports.get()]
            return Reading(question=question, graph={**counts, **view})
        units = [(t.start, t.end) for t in self._turns(ctx, document) or []]
        out = await self._answered(ctx, llm, text, graph, question, reports, places, units)
        usage: dict[str, Any] = {"stages": sink.summary(), **out.usage}
        if failed:
            usage["failed_build_chunks"] = failed
        return Reading(
            question=question,
            answer=out.answer,
            abstained=out.abstained,
            windows=out.windows,
            compaction_ratio=compaction(out.first_prompt, self._length(ctx, document)),
            graph=counts,
            usage=usage,
            details={"tier": ctx.tier, **out.details, **({"turns": len(units)} if units else {})},
        )

    async def _built(
        self,
        ctx: Context,
        llm: LLMClient | None,
        document: Episode,
        question: str,
        places: list[tuple[int, int]],
    ) -> tuple[ConceptGraph, int]:
        """The question's graph over the document: the heuristic build, or the D.1 calls
        chunk by chunk; and how many chunks failed."""
        chunks = self._chunks(ctx, document)
        if llm is None:
            graph = await asyncio.to_thread(
                self._sized_graph, ctx, document, question, chunks, places
            )
            return graph, 0
        p = self.params
        return await build_llm(
            llm,
            document.text,
            question,
            chunks,
            max_tokens=p.build_max_tokens,
            state_nodes=p.state_nodes,
            window=context_tokens(llm.backend),
        )

    async def _answered(
        self,
        ctx: Context,
        llm: LLMClient | None,
        text: str,
        graph: ConceptGraph,
        question: str,
        reports: ReportCache,
        places: list[tuple[int, int]],
        units: list[tuple[int, int]],
    ) -> Outcome:
        """The answer: the tool loop over the graph, or (no LLM, or a failed loop) the
        graph's evidence windows."""
        p = self.params
        heuristic = partial(
            evidence,
            text,
            graph,
            question,
            p.windows,
            p.window_chars,
            partial(embed_cached, ctx.store, ctx.embedder),
            places=places,
            units=units,
            unit_chars=p.turn_chars,
        )
        if llm is None:
            return heuristic()
        try:
            return await tool_loop(
                llm,
                text,
                graph,
                question,
                reports,
                size=p.window_chars,
                max_rounds=p.max_rounds,
                max_tokens=p.answer_max_tokens,
                window=context_tokens(llm.backend),
            )
        except LLMError as exc:  # the graph stands: answer from its evidence windows
            out = heuristic()
            out.details["answer_error"] = f"{type(exc).__name__}: {exc}"[:500]
            return out

    def chunk_tokens(self, ctx: Context) -> int:
        """The build's chunk size: ``chunk_tokens`` (the paper's 8,192), cut to what the
        model's context window holds when the model states one. A build prompt holds
        the instructions, the graph so far and the chunk, and the reply needs
        ``build_max_tokens`` (the model's build budget): the chunk gets half of what the
        reply leaves (the bundled GGUF model's 4,096 tokens give chunks of 1,024)."""
        p = self.params
        window = context_tokens(ctx.llm.backend) if ctx.llm is not None else None
        if window is None or ctx.llm is None:
            return p.chunk_tokens
        reply = p.build_max_tokens or ctx.llm.budgets.tokens(BUILD_STAGE)
        return min(p.chunk_tokens, max(MIN_CHUNK, (window - reply) // 2))

    def _chunks(self, ctx: Context, document: Episode) -> list[tuple[int, int]]:
        size = self.chunk_tokens(ctx)
        found: list[tuple[int, int]] = _per_document(
            ctx, "chunks", document, lambda text: chunk_spans(text, size), size
        )
        return found

    def _dense(
        self,
        ctx: Context,
        document: Episode,
        parsed: list[Sentence],
        question: str,
        places: list[tuple[int, int]],
    ) -> list[int]:
        """The sentence closest to the question (cosine) in each of the ``places``, then
        the ``dense_sentences`` sentences of the whole document closest to it; every
        sentence is embedded once, the store's embedding cache keeps them for the next
        question."""
        if not parsed or not (self.params.dense_sentences or places):
            return []
        text = document.text
        vecs = embed_cached(ctx.store, ctx.embedder, [text[s.start : s.end] for s in parsed])
        cos = vecs @ ctx.embedder.embed([question])[0]
        starts = [s.start for s in parsed]
        out = []
        for lo, hi in places:
            a, b = bisect_left(starts, lo), bisect_left(starts, hi)
            if a < b:
                out.append(a + int(np.argmax(cos[a:b])))
        order = np.argsort(-cos, kind="stable")[: self.params.dense_sentences]
        return list(dict.fromkeys(out + [int(k) for k in order]))

    def _turns(self, ctx: Context, document: Episode) -> list[Turn] | None:
        found: list[Turn] | None = _per_document(ctx, "turns", document, turns, keep=8)
        return found

    def _places(
        self, ctx: Context, namespace: str, document: Episode, question: str
    ) -> list[tuple[int, int]]:
        """The spans of the ``turn_places`` turns that System-1 (the ``default``
        recipe's search) ranks first for the question, best first; none unless the
        document is a transcript whose turns :mod:`memstrata.reading` stored."""
        found = self._turns(ctx, document) if ctx.llm is None else None
        where = turns_namespace(namespace)
        if not found or not self.params.turn_places or not ctx.store.has_namespace(where):
            return []
        route = EpisodeRoute(ctx.store, ctx.embedder, DEFAULT_SYSTEM1)
        hits = route.search(where, [question], self.params.turn_places)[0]
        out = []
        for h in hits:
            i = int(h.id) if h.id.isdigit() else -1
            if 0 <= i < len(found):
                out.append((found[i].start, found[i].end))
        return out

    def _sized_graph(
        self,
        ctx: Context,
        document: Episode,
        question: str,
        chunks: list[tuple[int, int]],
        places: list[tuple[int, int]],
    ) -> ConceptGraph:
        """The heuristic question graph, sized to the document: ``max_claims`` claims,
        fewer when the first answer call would exceed ``max_compaction`` of the document
        (a chat of 30,000 tokens gets a smaller graph; a 100,000-token document keeps
        them all). The claims dropped are the last ones by shared words; the sentences
        found by meaning keep their places. The floor is one claim per evidence window
        (``windows``): under ~7,000 tokens the D.2 instructions alone exceed 15% of the
        document, and a smaller graph would only read fewer places."""
        p, text = self.params, document.text
        parsed = self._parse(ctx, document)
        dense = self._dense(ctx, document, parsed, question, places)

        def build(claims: int) -> ConceptGraph:
            return question_graph(
                text,
                question,
                chunks,
                parsed=parsed,
                max_claims=claims,
                context=p.context,
                dense=dense,
            )

        graph = build(p.max_claims)
        if p.max_compaction is None:
            return graph
        budget = p.max_compaction * self._length(ctx, document)

        def fits(g: ConceptGraph) -> bool:
            return count_tokens(first_prompt(g, question)) <= budget

        if fits(graph):
            return graph
        # the most claims that fit: each brings its names and numbers into the prompt
        return build(
            most_that_fit(min(p.max_claims, p.windows), p.max_claims - 1, lambda n: fits(build(n)))
        )

    def _length(self, ctx: Context, document: Episode) -> int:
        """The document's length in tokens (the compaction ratio's L), once per text."""
        length: int = _per_document(ctx, "lengths", document, count_tokens, keep=64)
        return length

    def _parse(self, ctx: Context, document: Episode) -> list[Sentence]:
        found: list[Sentence] = _per_document(ctx, "parses", document, parse, keep=8)
        return found


def _per_document(
    ctx: Context,
    name: str,
    document: Episode,
    make: Callable[[str], Any],
    variant: int = 0,
    *,
    keep: int = 64,
) -> Any:
    """``make(document.text)``, computed once per document text (and ``variant``) in
    this process; the cache starts over past ``keep`` documents."""
    cache: dict[tuple[str, int, int], Any] = ctx.state(f"mindgraph.{name}", dict)
    key = (document.namespace, document.text.__hash__(), variant)
    if key not in cache:
        if len(cache) > keep:
            cache.clear()
        cache[key] = make(document.text)
    return cache[key]


def graph_view(graph: ConceptGraph, text: str) -> dict[str, Any]:
    """The whole graph, for ``--graph-only``: nodes and edges with spans and quotes."""

    def quote(start: int | None, end: int | None) -> str | None:
        return text[start:end] if start is not None and end is not None else None

    return {
        "graph_nodes": [
            {
                "id": n.id,
                "type": n.type,
                "content": n.content,
                "chunk": n.chunk,
                "start": n.start,
                "end": n.end,
                "src": quote(n.start, n.end),
            }
            for n in graph.nodes.values()
        ],
        "graph_edges": [
            {
                "source": e.source,
                "target": e.target,
                "relation": e.relation,
                "chunk": e.chunk,
                "start": e.start,
                "end": e.end,
            }
            for e in graph.edges
        ],
    }


def save_graph(
    ctx: Context, namespace: str, key: str, doc_id: str, graph: ConceptGraph, failed: int
) -> None:
    """Nodes, edges and the header as records of the namespace, in one transaction."""

    def spans(start: int | None, end: int | None) -> list[Span]:
        """The located span; an unlocated quote gets none (never a wrong one)."""
        if start is None or end is None:
            return []
        return [Span(episode=doc_id, start=start, end=end)]

    counters = {**graph.to_dict(), "nodes": [], "edges": [], "failed_chunks": failed}
    recs: list[Any] = [
        ConceptNode(
            id=_rid(namespace, key, "header"),
            namespace=namespace,
            label="",
            description=json.dumps(counters),
            node_type=HEADER,
            graph=key,
        )
    ]
    ids = {nid: _rid(namespace, key, "node", nid) for nid in graph.nodes}
    for n in graph.nodes.values():
        recs.append(
            ConceptNode(
                id=ids[n.id],
                namespace=namespace,
                label=n.id,
                description=n.content,
                node_type=n.type,
                chunk=n.chunk,
                graph=key,
                sources=spans(n.start, n.end),
            )
        )
    for i, e in enumerate(graph.edges):
        recs.append(
            ConceptEdge(
                id=_rid(namespace, key, "edge", str(i)),
                namespace=namespace,
                source_id=ids[e.source],
                target_id=ids[e.target],
                relation=e.relation,
                chunk=e.chunk,
                graph=key,
                sources=spans(e.start, e.end),
            )
        )
    ctx.store.write_records(namespace, recs, owner=BUILDER)


def load_graph(ctx: Context, namespace: str, key: str) -> ConceptGraph | None:
    nodes = [
        r
        for r in ctx.store.get_records(namespace, "concept_node", builder=BUILDER)
        if isinstance(r, ConceptNode) and r.graph == key
    ]
    header = next((r for r in nodes if r.node_type == HEADER), None)
    if header is None:
        return None
    counters = json.loads(header.description)
    graph = ConceptGraph.from_dict(counters)
    labels = {}
    for r in nodes:
        if r.node_type == HEADER:
            continue
        labels[r.id] = r.label
        span = r.sources[0] if r.sources else None
        graph.nodes[r.label] = Node(
            r.label,
            r.node_type,
            r.description,
            span.start if span else None,
            span.end if span else None,
            r.chunk,
        )
    for rec in ctx.store.get_records(namespace, "concept_edge", builder=BUILDER):
        if isinstance(rec, ConceptEdge) and rec.graph == key:
            span = rec.sources[0] if rec.sources else None
            graph.edges.append(
                Edge(
                    labels[rec.source_id],
                    labels[rec.target_id],
                    rec.relation,
                    span.start if span else None,
                    span.end if span else None,
                    rec.chunk,
                )
            )
    return graph
