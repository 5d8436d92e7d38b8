"""Design views: a JSON picture (a graph or a tree) of one design's records in a namespace.

A design lists its views in ``Design.views``; the service (``/v1/namespaces/NS/views``)
and the explorer find them by name without knowing any design. A view is cut to
``limit`` nodes so a large graph stays drawable: without a ``focus`` the best-connected
nodes (graphs) or the top levels (trees) are kept; with one, its neighbourhood or its
subtree. Nodes whose children were left out say how many, so the client can expand them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memstrata.models import Span

if TYPE_CHECKING:
    from memstrata.engine.contracts import Context

MAX_LIMIT = 5000
#: edges drawn per node kept, at most (a hub's hundreds of facts would hide the rest)
EDGES_PER_NODE = 4
Layout = Literal["graph", "tree"]


class ViewNode(BaseModel):
    id: str
    label: str
    kind: str = Field(description="the record kind, or what the node stands for")
    text: str = ""
    group: str = Field(default="", description="colour class: a layer, a community, a type")
    parent: str | None = Field(default=None, description="tree layouts: the parent shown")
    depth: int = 0
    invalid: bool = Field(default=False, description="superseded: kept for history")
    hidden_children: int = Field(default=0, description="children left out of this view")
    sources: list[Span] = Field(default_factory=list)
    details: dict[str, str] = Field(default_factory=dict)


class ViewEdge(BaseModel):
    source: str
    target: str
    label: str = ""
    text: str = ""
    invalid: bool = False
    sources: list[Span] = Field(default_factory=list)


class ViewQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: int = Field(default=200, ge=1, le=MAX_LIMIT)
    focus: str | None = Field(default=None, description="a node id to centre on")
    depth: int | None = Field(default=None, ge=0, le=64, description="trees: levels shown")


class View(BaseModel):
    name: str
    design: str = ""
    title: str = ""
    layout: Layout
    nodes: list[ViewNode]
    edges: list[ViewEdge] = Field(default_factory=list)
    total_nodes: int
    total_edges: int = 0
    truncated: bool = False
    focus: str | None = None
    legend: dict[str, str] = Field(default_factory=dict)


@dataclass(frozen=True)
class DesignView:
    """A view a design offers: ``render(ctx, namespace, query)`` builds it from the
    records of ``builder`` (the view is listed for namespaces that hold some)."""

    name: str
    title: str
    layout: Layout
    builder: str
    render: Callable[[Context, str, ViewQuery], View]
    description: str = ""

    def summary(self, design: str) -> dict[str, Any]:
        return {
            "name": self.name,
            "design": design,
            "title": self.title,
            "layout": self.layout,
            "description": self.description,
        }


def cut_graph(
    nodes: dict[str, ViewNode], edges: list[ViewEdge], query: ViewQuery
) -> tuple[list[ViewNode], list[ViewEdge], bool]:
    """At most ``query.limit`` nodes: the focus and its nearest neighbours, or the nodes
    with the most edges; the edges between the nodes kept, a few per node."""
    edges = [e for e in edges if e.source in nodes and e.target in nodes]
    adjacent: dict[str, list[str]] = {n: [] for n in nodes}
    for e in edges:
        adjacent[e.source].append(e.target)
        adjacent[e.target].append(e.source)
    if query.focus in nodes:
        keep = _nearest(query.focus, adjacent, query.limit)
    else:
        ranked = sorted(nodes, key=lambda n: -len(adjacent[n]))  # stable: ties keep order
        keep = ranked[: query.limit]
    kept = set(keep)
    drawn: dict[str, int] = {}
    shown = []
    for e in edges:
        if e.source in kept and e.target in kept:
            if min(drawn.get(e.source, 0), drawn.get(e.target, 0)) >= EDGES_PER_NODE:
                continue
            drawn[e.source] = drawn.get(e.source, 0) + 1
            drawn[e.target] = drawn.get(e.target, 0) + 1
            shown.append(e)
    out = []
    for n in keep:
        hidden = sum(1 for m in adjacent[n] if m not in kept)
        out.append(nodes[n].model_copy(update={"hidden_children": hidden}))
    return out, shown, len(keep) < len(nodes) or len(shown) < len(edges)


def _nearest(start: str, adjacent: dict[str, list[str]], limit: int) -> list[str]:
    seen = {start: None}
    todo = deque([start])
    while todo and len(seen) < limit:
        for m in adjacent[todo.popleft()]:
            if m not in seen:
                seen[m] = None
                todo.append(m)
                if len(seen) == limit:
                    break
    return list(seen)


def cut_tree(nodes: dict[str, ViewNode], query: ViewQuery) -> tuple[list[ViewNode], bool]:
    """Levels from the roots (or from ``query.focus``) down, breadth first, until
    ``query.limit`` nodes or ``query.depth`` levels; each node says how many of its
    children were left out."""
    children: dict[str | None, list[str]] = {}
    for n in nodes.values():
        parent = n.parent if n.parent in nodes else None
        children.setdefault(parent, []).append(n.id)
    level = [query.focus] if query.focus in nodes else children.get(None, [])
    kept: dict[str, ViewNode] = {}
    depth = 0
    while level and len(kept) < query.limit:
        below: list[str] = []
        for nid in level:
            if len(kept) == query.limit:
                break
            kept[nid] = nodes[nid]
            if query.depth is None or depth < query.depth:
                below.extend(children.get(nid, []))
        level, depth = below, depth + 1
    out = []
    for nid, node in kept.items():
        hidden = sum(1 for c in children.get(nid, []) if c not in kept)
        parent = node.parent if node.parent in kept else None
        out.append(node.model_copy(update={"hidden_children": hidden, "parent": parent}))
    return out, len(kept) < len(nodes)


def graph(
    spec: DesignView,
    design: str,
    nodes: Iterable[ViewNode],
    edges: list[ViewEdge],
    query: ViewQuery,
    legend: dict[str, str] | None = None,
) -> View:
    """A graph view of ``nodes`` and ``edges``, cut to the query."""
    table = {n.id: n for n in nodes}
    kept, shown, cut = cut_graph(table, edges, query)
    return View(
        name=spec.name,
        design=design,
        title=spec.title,
        layout="graph",
        nodes=kept,
        edges=shown,
        total_nodes=len(table),
        total_edges=len(edges),
        truncated=cut,
        focus=query.focus if query.focus in table else None,
        legend=legend or {},
    )


def tree(
    spec: DesignView,
    design: str,
    nodes: Iterable[ViewNode],
    query: ViewQuery,
    legend: dict[str, str] | None = None,
) -> View:
    """A tree view of ``nodes`` (each naming its ``parent``), cut to the query."""
    table = {n.id: n for n in nodes}
    kept, cut = cut_tree(table, query)
    return View(
        name=spec.name,
        design=design,
        title=spec.title,
        layout="tree",
        nodes=kept,
        total_nodes=len(table),
        truncated=cut,
        focus=query.focus if query.focus in table else None,
        legend=legend or {},
    )


def short(text: str, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` characters (a label, not the content)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
