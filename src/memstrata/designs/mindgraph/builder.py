"""MindGraph's memory mode: a question-agnostic concept graph over a namespace, kept
current as episodes arrive (the engine hands over batches of new episodes).

Records: ``concept_node`` (``label`` what the node is called, ``description`` its
content, ``node_type``, ``sources`` the spans of its quotes) and ``concept_edge``;
``graph`` is "" (the namespace's own graph, apart from the reader's per-question graphs).

* **heuristic**: each sentence of an episode is a ``claim`` node (its span; labelled by
  its first words), the numbers in it ``stat`` nodes (labelled by the value), and the
  names in it (:func:`memstrata.nlp.names`) one ``entity`` node per name for the whole
  namespace (labelled by the name as first written, "Zürich"; one name however it is
  cased or typed), whose sources gather every mention. Edges: entity ``mentioned_in``
  claim, stat ``stated_in`` claim, claim ``followed_by`` the next claim (sentence order,
  across the episodes of a batch).
* **llm**: one D.1 call per batch, the batch's episodes as the text block and, as the
  graph state, the stored nodes that share terms with it (``state_nodes`` at most). The
  question slot says that no question is known yet. Operations are validated as in the
  reader; a node whose quote cannot be located is rejected (a record needs a span), and
  every located span is mapped back to its episode. Each operation is counted in the
  build report's ``work``: ``applied.<op>`` when the graph took it, ``rejected.<reason>``
  when it was refused (``quote_outside_turns``: a node taken whose quote lies only in a
  ``speaker: `` heading, so no turn can cite it). A call that fails (nothing usable
  after one re-ask) fails the batch's episodes: nothing of them is written and each
  waits for ``memstrata retry``, rather than being marked built with nothing from it.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memstrata import nlp
from memstrata.designs.mindgraph.graph import BUILDER, ConceptGraph, Node, snake
from memstrata.designs.mindgraph.heuristic import episode_parts
from memstrata.designs.mindgraph.llm_build import build_llm
from memstrata.designs.mindgraph.records import ConceptEdge, ConceptNode
from memstrata.designs.mindgraph.repair import repair_records
from memstrata.engine.contracts import Builder, Context, StepResult
from memstrata.errors import ConfigError
from memstrata.llm.base import context_tokens
from memstrata.models import Derived, Episode, Span
from memstrata.retrieval.text import content_terms
from memstrata.store.base import Repairs

NO_QUESTION = (
    "(none yet: this is a long-term memory; keep the people, events, claims and numbers "
    "a later question about this text may need)"
)


class MindGraphParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state_nodes: int = Field(default=40, ge=0, description="llm: stored nodes shown per call")
    max_tokens: int | None = Field(
        default=None,
        ge=64,
        description="llm: completion per call; default: the model's (mindgraph.build)",
    )


def rid(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:32]


class MindGraphBuilder(Builder[MindGraphParams]):
    """The namespace's concept graph, batch by batch."""

    name = BUILDER
    kinds = ("concept_node", "concept_edge", "community")
    Params = MindGraphParams
    stage_prefix = "mindgraph."

    async def update(self, ctx: Context, namespace: str, episodes: Sequence[Episode]) -> StepResult:
        batch = list(episodes)
        if ctx.tier == "llm":
            if ctx.llm is None:
                raise ConfigError("the llm tier needs an LLM; configure llm.kind or use heuristic")
            errors: list[str] = []
            work: Counter[str] = Counter()
            records, deleted = await self._llm(ctx, namespace, batch, errors, work)
            if errors:  # the batch is one call: nothing of it is written, all is retried
                return StepResult(failed={ep.id: errors[0] for ep in batch})
        else:
            work = Counter()
            records, deleted = await asyncio.to_thread(self._heuristic, ctx, namespace, batch)
        keys = [ep.key for ep in batch]
        await asyncio.to_thread(
            ctx.store.write_records, namespace, records, deleted, (self.name, keys)
        )
        return StepResult(work=dict(work))

    # heuristic --------------------------------------------------------------------------
    def _heuristic(
        self, ctx: Context, namespace: str, batch: list[Episode]
    ) -> tuple[list[Derived], list[str]]:
        out: list[Derived] = []
        entities: dict[str, ConceptNode] = {}
        previous: str | None = None
        nlp.analyse([ep.text for ep in batch])  # one pass of the pipeline for the batch
        plan = [(ep, episode_parts(ep.text, ep.speaker)) for ep in batch]
        wanted = {
            rid(namespace, "entity", p.key)
            for _, parts in plan
            for p in parts
            if p.type == "entity"
        }
        for rec in ctx.store.get_records(
            namespace, "concept_node", sorted(wanted), builder=BUILDER
        ):
            if isinstance(rec, ConceptNode):
                entities[rec.id] = rec
        for ep, parts in plan:
            ids: dict[str, str] = {}
            for part in parts:
                span = Span(episode=ep.id, start=part.start, end=part.end)
                if part.type == "entity":
                    nid = rid(namespace, "entity", part.key)
                    node = entities.get(nid)
                    if node is None:
                        node = entities[nid] = ConceptNode(
                            id=nid,
                            namespace=namespace,
                            label=part.label,
                            description=part.content,
                            node_type="entity",
                        )
                    if span not in node.sources:
                        node.sources.append(span)
                else:
                    nid = rid(namespace, ep.id, part.key)
                    out.append(
                        ConceptNode(
                            id=nid,
                            namespace=namespace,
                            label=part.label,
                            description=part.content,
                            node_type=part.type,
                            sources=[span],
                        )
                    )
                    if part.type == "claim":
                        if previous is not None:
                            out.append(_edge(namespace, previous, nid, "followed_by", span))
                        previous = nid
                ids[part.key] = nid
                if part.claim is not None:
                    relation = "mentioned_in" if part.type == "entity" else "stated_in"
                    out.append(_edge(namespace, nid, ids[part.claim], relation, span))
        return list(entities.values()) + out, []

    # llm --------------------------------------------------------------------------------
    async def _llm(
        self,
        ctx: Context,
        namespace: str,
        batch: list[Episode],
        errors: list[str],
        work: Counter[str],
    ) -> tuple[list[Derived], list[str]]:
        """The batch's records and deleted ids; ``work`` gets the D.1 operations applied and
        rejected (by kind and by reason), so that none is dropped unseen."""
        assert ctx.llm is not None
        text, offsets = _join(batch)
        stored = await asyncio.to_thread(_stored_nodes, ctx, namespace)
        graph = ConceptGraph()
        terms = set(content_terms(text))
        near = sorted(
            stored.values(),
            key=lambda r: -len(terms & set(content_terms(r.description))),
        )[: self.params.state_nodes]
        for r in near:
            graph.nodes[r.label] = Node(r.label, r.node_type, r.description)
        before = {nid: n.content for nid, n in graph.nodes.items()}
        graph, _ = await build_llm(
            ctx.llm,
            text,
            NO_QUESTION,
            [(0, len(text))],
            graph=graph,
            require_span=True,
            max_tokens=self.params.max_tokens,
            window=context_tokens(ctx.llm.backend),
            errors=errors,
        )
        work.update({f"applied.{op}": n for op, n in graph.applied.items()})
        work.update({f"rejected.{why}": n for why, n in graph.rejected.items()})
        records: list[Derived] = []
        deleted = [rid(namespace, "llm", n) for n in before if n not in graph.nodes]
        for nid, node in graph.nodes.items():
            old = stored.get(nid)
            if old is not None and before.get(nid) == node.content:
                continue
            sources = list(old.sources) if old is not None else []
            span = _to_episode(node.start, node.end, offsets)
            if span is not None and span not in sources:
                sources.append(span)
            if not sources:  # its quote lies only in a "speaker: " heading, in no turn
                work["rejected.quote_outside_turns"] += 1
                continue
            records.append(
                ConceptNode(
                    id=rid(namespace, "llm", nid),
                    namespace=namespace,
                    label=nid,
                    description=node.content,
                    node_type=node.type,
                    sources=sources,
                )
            )
        for e in graph.edges:
            span = _to_episode(e.start, e.end, offsets)
            src = records_span(records, stored, namespace, e.source)
            sources = [span] if span is not None else src
            if not sources:  # neither its quote nor its source node lies in a turn
                work["rejected.edge_outside_turns"] += 1
            else:
                records.append(
                    _edge(
                        namespace,
                        rid(namespace, "llm", e.source),
                        rid(namespace, "llm", e.target),
                        e.relation,
                        sources[0],
                    )
                )
        return records, deleted

    async def repair(self, ctx: Context, namespace: str, work: Repairs) -> None:
        """Nodes, edges, reports and readings without the removed text
        (:mod:`memstrata.designs.mindgraph.repair`)."""
        await asyncio.to_thread(repair_records, ctx.store, namespace, work)

    async def describe(self, ctx: Context, namespace: str) -> dict[str, Any]:
        nodes = await asyncio.to_thread(_stored_nodes, ctx, namespace)
        types: dict[str, int] = {}
        for n in nodes.values():
            types[n.node_type] = types.get(n.node_type, 0) + 1
        return {"nodes_by_type": types}


def records_span(
    records: list[Derived], stored: dict[str, ConceptNode], namespace: str, label: str
) -> list[Span]:
    """The first span of a node, new or stored, for an edge whose quote was not found."""
    rec_id = rid(namespace, "llm", label)
    for r in records:
        if r.id == rec_id and r.sources:
            return [r.sources[0]]
    old = stored.get(label)
    return [old.sources[0]] if old is not None and old.sources else []


def _edge(namespace: str, source: str, target: str, relation: str, span: Span) -> ConceptEdge:
    return ConceptEdge(
        id=rid(namespace, "edge", source, target, relation),
        namespace=namespace,
        source_id=source,
        target_id=target,
        relation=relation,
        sources=[span],
    )


def _stored_nodes(ctx: Context, namespace: str) -> dict[str, ConceptNode]:
    return {
        r.label: r
        for r in ctx.store.get_records(namespace, "concept_node", builder=BUILDER)
        if isinstance(r, ConceptNode) and r.graph == ""
    }


def _join(batch: list[Episode]) -> tuple[str, list[tuple[int, int, str]]]:
    """The batch as one text block (a ``speaker: `` head per episode) and where each
    episode's own text lies in it."""
    parts: list[str] = []
    offsets: list[tuple[int, int, str]] = []
    at = 0
    for ep in batch:
        head = f"{ep.speaker}: " if ep.speaker else ""
        offsets.append((at + len(head), at + len(head) + len(ep.text), ep.id))
        parts.append(head + ep.text)
        at += len(head) + len(ep.text) + 1
    return "\n".join(parts), offsets


def _to_episode(
    start: int | None, end: int | None, offsets: list[tuple[int, int, str]]
) -> Span | None:
    """A span of the joined block as a span of the episode it starts in (clipped)."""
    if start is None or end is None:
        return None
    for lo, hi, eid in offsets:
        if lo <= start < hi or (start < lo < end):
            s = max(start, lo)
            return Span(episode=eid, start=s - lo, end=min(end, hi) - lo)
    return None


__all__ = ["BUILDER", "MindGraphBuilder", "MindGraphParams", "rid", "snake"]
