"""Subgraphs for ``subgraph_summary`` (section 3.3): Leiden partitions and their reports.

**Partition.** Leiden (``leidenalg`` over ``igraph``, modularity, a fixed seed) on the
undirected graph. ``max_cluster_size`` = 10 as in GraphRAG's hierarchical Leiden: a
community larger than that is partitioned again on its own subgraph, and one Leiden
cannot split (a clique, a star) is cut into pieces of at most 10 in order of degree. So
every subgraph has at most 10 nodes and the same graph always gives the same subgraphs.
(``leidenalg``'s own ``max_comm_size`` is passed too, but it does not bound the final
communities by itself.) Nodes without edges share subgraphs of at most 10, in id
order, rather than one each: every subgraph costs a report (an LLM call on the llm
tier), and a loose node has nothing to be summarised with.

**Reports**, one per subgraph: title, impact rating (0-10), summary and findings. On the
llm tier one call each (:func:`prompts.report`); on the heuristic tier extractive: the
hub (most edges inside) names it, the members' contents are the findings, hubs first,
and the rating is the subgraph's share of edges against the busiest one. They are made
on first access and cached in the store as ``community`` records keyed by the graph's
hash (:meth:`ConceptGraph.digest`), so another graph (or a changed one) never reads
stale reports.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memstrata.designs.mindgraph import prompts
from memstrata.designs.mindgraph.graph import BUILDER, ConceptGraph
from memstrata.designs.mindgraph.records import Community
from memstrata.llm.base import LLMClient
from memstrata.llm.types import LLMError
from memstrata.models import Span
from memstrata.store.base import Store

if TYPE_CHECKING:
    import igraph as ig

MAX_CLUSTER_SIZE = 10
SEED = 42


def partition(
    graph: ConceptGraph, max_size: int = MAX_CLUSTER_SIZE, seed: int = SEED
) -> list[list[str]]:
    """Subgraphs as lists of node ids, largest first, then by first id."""
    ids = sorted(graph.nodes)
    if not ids:
        return []
    # igraph imports matplotlib when it is installed: only a partition pays for it.
    import igraph as ig

    index = {nid: i for i, nid in enumerate(ids)}
    pairs = {tuple(sorted((index[e.source], index[e.target]))) for e in graph.edges}
    g = ig.Graph(n=len(ids), edges=sorted(pairs))
    linked = sorted({i for pair in pairs for i in pair})
    parts = _split(g, linked, max_size, seed) if linked else []
    # nodes without edges share subgraphs of at most max_size, in id order: one report
    # each would be an LLM call per loose node, and such a node has no neighbours to
    # summarise with anyway
    lone = sorted(set(range(len(ids))) - set(linked))
    parts += [lone[i : i + max_size] for i in range(0, len(lone), max_size)]
    named = [sorted(ids[i] for i in part) for part in parts]
    return sorted(named, key=lambda p: (-len(p), p[0]))


def _split(g: ig.Graph, members: list[int], max_size: int, seed: int) -> list[list[int]]:
    import leidenalg as la

    sub = g.induced_subgraph(members)
    if sub.ecount() == 0:
        return [[m] for m in members]
    found = la.find_partition(sub, la.ModularityVertexPartition, seed=seed, max_comm_size=max_size)
    out: list[list[int]] = []
    for community in found:
        group = [members[i] for i in community]
        if len(group) <= max_size:
            out.append(group)
        elif len(community) < len(members):
            out.extend(_split(g, group, max_size, seed))
        else:  # Leiden keeps it whole: cut it by degree, hubs first
            degree = g.induced_subgraph(group).degree()
            order = [group[i] for i in sorted(range(len(group)), key=lambda i: (-degree[i], i))]
            out.extend(order[i : i + max_size] for i in range(0, len(order), max_size))
    return out


@dataclass
class Subgraph:
    id: int
    node_ids: list[str]
    title: str
    rating: float
    summary: str
    findings: list[str] = field(default_factory=list)

    def index_line(self) -> str:
        return f"{self.id} | {self.title} | {self.rating:g} | {len(self.node_ids)}"

    def detail(self) -> str:
        lines = [f"Subgraph {self.id}: {self.title} (impact {self.rating:g})", self.summary]
        lines += [f"- {f}" for f in self.findings]
        lines.append("Nodes: " + ", ".join(self.node_ids))
        return "\n".join(lines)


def _inner_degree(graph: ConceptGraph, members: list[str]) -> dict[str, int]:
    inside = set(members)
    deg = dict.fromkeys(members, 0)
    for e in graph.edges:
        if e.source in inside and e.target in inside:
            deg[e.source] += 1
            deg[e.target] += 1
    return deg


def heuristic_reports(graph: ConceptGraph, parts: list[list[str]]) -> list[Subgraph]:
    """Extractive reports: the hub names the subgraph, members' contents are findings."""
    edges = [sum(_inner_degree(graph, p).values()) // 2 for p in parts]
    busiest = max(edges, default=0) or 1
    out = []
    for i, members in enumerate(parts):
        deg = _inner_degree(graph, members)
        order = sorted(members, key=lambda n: (-deg[n], n))
        hub = graph.nodes[order[0]]
        claims = [graph.nodes[n] for n in order if graph.nodes[n].type != "entity"]
        title = hub.content[:80] + (f" and {len(members) - 1} more" if len(members) > 1 else "")
        summary = f"{len(members)} nodes around {hub.content[:80]!r}"
        if claims:
            summary += ": " + " ".join(c.content for c in claims[:2])
        findings = [f"{graph.nodes[n].content} ({graph.nodes[n].type})" for n in order[:10]]
        rating = round(10 * edges[i] / busiest, 1)
        out.append(Subgraph(i, members, title, rating, summary, findings))
    return out


def render_subgraph(graph: ConceptGraph, members: list[str]) -> str:
    inside = set(members)
    data = {
        "nodes": [
            {"id": n, "type": graph.nodes[n].type, "content": graph.nodes[n].content}
            for n in members
        ],
        "edges": [
            {"source": e.source, "target": e.target, "relation": e.relation}
            for e in graph.edges
            if e.source in inside and e.target in inside
        ],
    }
    return json.dumps(data, ensure_ascii=False)


async def llm_reports(
    llm: LLMClient, graph: ConceptGraph, parts: list[list[str]], question: str
) -> list[Subgraph]:
    """One report call per subgraph; a failed call falls back to the extractive report."""
    fallback = heuristic_reports(graph, parts)

    async def one(i: int, members: list[str]) -> Subgraph:
        messages, model = prompts.report(question, render_subgraph(graph, members))
        try:
            budget = llm.budgets.tokens(prompts.REPORT_STAGE)
            rep = await llm.structured(
                messages, model, stage=prompts.REPORT_STAGE, max_tokens=budget
            )
        except LLMError:
            return fallback[i]
        assert isinstance(rep, prompts.Report)
        findings = [f for f in rep.findings if f.strip()] or fallback[i].findings
        return Subgraph(
            i, members, rep.title or fallback[i].title, rep.rating, rep.summary, findings
        )

    return list(await asyncio.gather(*(one(i, m) for i, m in enumerate(parts))))


class ReportCache:
    """Subgraphs of one graph, made on first access and kept in the store by its hash."""

    def __init__(
        self,
        store: Store,
        namespace: str,
        graph: ConceptGraph,
        spans: dict[str, list[Span]],
        llm: LLMClient | None,
        question: str,
    ) -> None:
        self.store = store
        self.namespace = namespace
        self.graph = graph
        self.spans = spans  # each node's provenance in the store's terms
        self.llm = llm
        self.question = question
        self.digest = graph.digest() + ("-llm" if llm is not None else "-heuristic")
        self._subgraphs: list[Subgraph] | None = None
        self.generated = False  # whether this instance had to make them

    async def get(self) -> list[Subgraph]:
        if self._subgraphs is None:
            self._subgraphs = await asyncio.to_thread(self._load)
        if self._subgraphs is None:
            parts = partition(self.graph)
            if self.llm is not None:
                subs = await llm_reports(self.llm, self.graph, parts, self.question)
            else:
                subs = heuristic_reports(self.graph, parts)
            await asyncio.to_thread(self._save, subs)
            self._subgraphs = subs
            self.generated = True
        return self._subgraphs

    def _record_id(self, i: int) -> str:
        key = f"{self.namespace}\x00{self.digest}\x00{i}"
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]

    def _load(self) -> list[Subgraph] | None:
        recs = [
            r
            for r in self.store.get_records(self.namespace, "community", builder=BUILDER)
            if isinstance(r, Community) and r.graph == self.digest
        ]
        if not recs:
            return None
        recs.sort(key=lambda r: r.level)
        return [
            Subgraph(r.level, list(r.member_ids), r.title, r.rating, r.report, list(r.findings))
            for r in recs
        ]

    def _save(self, subs: list[Subgraph]) -> None:
        recs = []
        for s in subs:
            sources = list(dict.fromkeys(sp for n in s.node_ids for sp in self.spans.get(n, [])))
            recs.append(
                Community(
                    id=self._record_id(s.id),
                    namespace=self.namespace,
                    sources=sources,
                    level=s.id,
                    member_ids=s.node_ids,
                    report=s.summary,
                    graph=self.digest,
                    title=s.title,
                    rating=s.rating,
                    findings=s.findings,
                )
            )
        self.store.write_records(self.namespace, recs, owner=BUILDER)
