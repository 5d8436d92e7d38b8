"""The memory mode's answerer: the paper's tool loop (D.2, D.3) over the concept graph of
the turns a search found.

A namespace's graph can hold every turn ever written, more than a prompt holds, so the
loop reads the part of it the search reached: the hits' source episodes, put in time
order into one document (each rendered as the answer model reads a turn, separated by
blank lines), with every concept node and edge of those episodes, their quote spans
moved to the document's offsets. ``lookup_source(node_id)`` returns the window around a
node's quote in that document (near a turn's edge it shows the turn beside it, said
just before or after); ``subgraph_summary`` reads the
Leiden subgraphs of this graph, reported and cached as the reader mode's are. The answer
cites the turns the model looked up and the nodes it cited (the search's episodes when it
did neither). Without an LLM, and when the loop fails, the ``grounded`` answerer
answers from the same hits; after a failed loop the answer says so (``Answer.fallback``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from memstrata.designs.mindgraph.answer import tool_loop
from memstrata.designs.mindgraph.communities import ReportCache
from memstrata.designs.mindgraph.graph import ConceptGraph, Edge, Node, snake
from memstrata.designs.mindgraph.route import graph_index
from memstrata.engine.answer import GroundedAnswerer, usage_of
from memstrata.engine.contracts import NOT_IN_MEMORY, Answer, Answerer, Context, QuestionInfo
from memstrata.llm.base import context_tokens
from memstrata.llm.tools import MAX_ROUNDS
from memstrata.llm.types import LLMError, MemoryUsageSink
from memstrata.models import Hit, Span
from memstrata.retrieval import documents

SEPARATOR = "\n\n"
logger = logging.getLogger("memstrata.mindgraph")


class MemoryAnswerParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_episodes: int = Field(default=10, ge=1, description="the hits' turns read")
    window_chars: int = Field(default=1000, ge=100, description="lookup_source window")
    max_rounds: int = Field(default=MAX_ROUNDS, ge=1, description="tool rounds at most")
    max_tokens: int | None = Field(
        default=None,
        ge=64,
        description="completion budget per round; default: the model's (mindgraph.answer)",
    )


@dataclass
class Reading:
    """The document the loop reads, its graph, and where each turn lies in it."""

    text: str
    graph: ConceptGraph
    spans: dict[str, list[Span]]  # node id -> its quotes in the store's terms
    turns: list[tuple[int, int, str]]  # (start, end, episode id) in the document


def reading(ctx: Context, namespace: str, hits: list[Hit], limit: int) -> Reading | None:
    """The hits' turns in time order as one document, with their nodes and edges."""
    wanted = list(dict.fromkeys(s for h in hits for s in h.sources))[:limit]
    episodes = ctx.store.get_episodes(namespace, wanted)
    if not episodes:
        return None
    episodes.sort(key=lambda e: (e.occurred_at is None, e.occurred_at or e.created_at, e.seq))
    parts: list[str] = []
    offset: dict[str, int] = {}
    turns = []
    at = 0
    for ep in episodes:
        rendered = documents.episode_hit(ep, 0.0).text
        head = rendered.index(ep.text) if ep.text in rendered else None
        if head is None:  # a caption or a cut rendering: show the text itself
            rendered, head = ep.text, 0
        offset[ep.id] = at + head
        turns.append((at, at + len(rendered), ep.id))
        parts.append(rendered)
        at += len(rendered) + len(SEPARATOR)
    text = SEPARATOR.join(parts)
    graph = ConceptGraph()
    spans: dict[str, list[Span]] = {}
    by_record: dict[str, str] = {}
    index = graph_index(ctx, namespace)  # the copy the search just read
    for rec in index.nodes.values():
        mine = [s for s in rec.sources if s.episode in offset]
        if not mine:
            continue
        nid = _unique(graph, snake(rec.label) or "node")
        first = mine[0]
        start = offset[first.episode] + first.start
        graph.nodes[nid] = Node(
            nid, rec.node_type, rec.description or rec.label, start, start + first.end - first.start
        )
        spans[nid] = mine
        by_record[rec.id] = nid
    for edge in index.edges:
        a, b = by_record.get(edge.source_id), by_record.get(edge.target_id)
        if a is not None and b is not None:
            graph.edges.append(Edge(a, b, edge.relation))
    if not graph.nodes:
        return None
    graph.chunks = len(episodes)
    return Reading(text, graph, spans, turns)


def _unique(graph: ConceptGraph, base: str) -> str:
    nid, n = base, 2
    while nid in graph.nodes:
        nid, n = f"{base}_{n}", n + 1
    return nid


class MindGraphMemoryAnswerer(Answerer[MemoryAnswerParams]):
    """``ask`` on the ``mindgraph`` recipe: the D.2 tool loop over the hits' graph."""

    name = "mindgraph"
    Params = MemoryAnswerParams

    async def answer(
        self,
        ctx: Context,
        namespace: str,
        question: str,
        hits: list[Hit],
        about: QuestionInfo | None = None,
    ) -> Answer:
        p = self.params
        if ctx.llm is None or not hits:
            return await GroundedAnswerer().answer(ctx, namespace, question, hits, about)
        read = await asyncio.to_thread(reading, ctx, namespace, hits, p.max_episodes)
        if read is None:  # none of the turns is folded into the graph yet
            return await GroundedAnswerer().answer(ctx, namespace, question, hits, about)
        sink = MemoryUsageSink()
        llm = ctx.llm.scoped(namespace=namespace, usage=sink)
        reports = ReportCache(ctx.store, namespace, read.graph, read.spans, llm, question)
        try:
            out = await tool_loop(
                llm,
                read.text,
                read.graph,
                question,
                reports,
                size=p.window_chars,
                max_rounds=p.max_rounds,
                max_tokens=p.max_tokens,
                window=context_tokens(llm.backend),
            )
        except LLMError as exc:  # the hits stand: the grounded answer from them, said so
            logger.warning("the mindgraph tool loop failed, answering from the hits: %s", exc)
            answer = await GroundedAnswerer().answer(ctx, namespace, question, hits, about)
            why = f"mindgraph tool loop: {type(exc).__name__}: {exc}"[:300]
            return answer.model_copy(update={"fallback": why})
        looked = [self._turn(read, w.start) for w in out.windows]
        cited = [s.episode for n in out.details.get("cited_nodes", []) for s in read.spans[n]]
        sources = list(dict.fromkeys([e for e in looked if e] + cited))
        if not sources:
            sources = [e for _, _, e in read.turns]
        tools: dict[str, int] = out.details.get("tool_calls", {})
        usage = {
            **usage_of(sink),
            "tool_rounds": int(out.details.get("tool_rounds", 0)),
            **{f"tool.{name}": n for name, n in tools.items()},
        }
        return Answer(
            question=question,
            text=NOT_IN_MEMORY if out.abstained else str(out.answer),
            sources=[] if out.abstained else sources,
            abstained=out.abstained,
            usage=usage,
            hits=hits,
        )

    @staticmethod
    def _turn(read: Reading, at: int) -> str | None:
        return next((e for lo, hi, e in read.turns if lo <= at < hi), None)
