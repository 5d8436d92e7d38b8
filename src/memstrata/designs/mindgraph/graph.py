"""The concept graph (section 3.1) and its four edit operations (section 3.2, D.1).

Nodes are typed (entity, event, claim, concept, stat), carry a short content, the chunk
that introduced them and a provenance span ``[start, end)`` into the source, located
from the operation's verbatim ``src`` quote (:mod:`.provenance`). Edges are labelled,
directed, with their own span and chunk.

Every operation is validated before it changes anything; a rejected one is counted by
reason in ``rejected`` (unknown op, missing or duplicate id, unknown type, empty
content, an edge whose end does not exist, a duplicate edge). A quote that cannot be
located is counted in ``provenance["unlocated"]``: the node or edge is kept without a
span (``require_span`` rejects it instead, for the memory mode, whose records need one).
Deleting a node deletes its edges.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from memstrata.designs.mindgraph.provenance import locate

#: the builder that owns the records this design reads and writes
BUILDER = "mindgraph"
NODE_TYPES = ("entity", "event", "claim", "concept", "stat")
_ID = re.compile(r"[\W_]+")


def snake(text: str, limit: int = 48) -> str:
    """A readable snake_case id, in the text's own letters ("Zürich" is ``zürich``)."""
    folded = unicodedata.normalize("NFC", text).casefold()
    return _ID.sub("_", folded).strip("_")[:limit].strip("_")


@dataclass
class Node:
    id: str
    type: str
    content: str
    start: int | None = None
    end: int | None = None
    chunk: int = 0


@dataclass
class Edge:
    source: str
    target: str
    relation: str
    start: int | None = None
    end: int | None = None
    chunk: int = 0


@dataclass
class ConceptGraph:
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    chunks: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    provenance: Counter[str] = field(default_factory=Counter)
    applied: Counter[str] = field(default_factory=Counter)

    # operations -------------------------------------------------------------------------
    def apply(
        self,
        op: dict[str, Any],
        text: str,
        chunk: int,
        lo: int = 0,
        hi: int | None = None,
        *,
        require_span: bool = False,
    ) -> bool:
        """Apply one operation whose quotes come from ``text[lo:hi]``; False if rejected."""
        kind = str(op.get("op") or "")
        handler = {
            "add_node": self._add_node,
            "add_edge": self._add_edge,
            "edit_node": self._edit_node,
            "delete_node": self._delete_node,
        }.get(kind)
        if handler is None:
            return self._reject("unknown_op")
        reason = handler(op, text, chunk, lo, hi, require_span)
        if reason is not None:
            return self._reject(reason)
        self.applied[kind] += 1
        return True

    def _reject(self, reason: str) -> bool:
        self.rejected[reason] += 1
        return False

    def _span(
        self, op: dict[str, Any], text: str, lo: int, hi: int | None
    ) -> tuple[int | None, int | None, str | None]:
        quote = op.get("src")
        if not isinstance(quote, str) or not quote.strip():
            self.provenance["no_quote"] += 1
            return None, None, None
        found = locate(quote, text, lo, hi)
        if found is None:
            self.provenance["unlocated"] += 1
            return None, None, None
        self.provenance[found.method] += 1
        return found.start, found.end, found.method

    def _add_node(
        self, op: dict[str, Any], text: str, chunk: int, lo: int, hi: int | None, req: bool
    ) -> str | None:
        nid, ntype, content = _str(op.get("id")), _str(op.get("type")), _str(op.get("content"))
        if not nid:
            return "missing_id"
        if nid in self.nodes:
            return "duplicate_id"
        if ntype not in NODE_TYPES:
            return "unknown_type"
        if not content:
            return "empty_content"
        start, end, _ = self._span(op, text, lo, hi)
        if req and start is None:
            return "no_span"
        self.nodes[nid] = Node(nid, ntype, content, start, end, chunk)
        return None

    def _add_edge(
        self, op: dict[str, Any], text: str, chunk: int, lo: int, hi: int | None, req: bool
    ) -> str | None:
        src, dst, rel = _str(op.get("source")), _str(op.get("target")), _str(op.get("relation"))
        if src not in self.nodes or dst not in self.nodes:
            return "dangling_edge"
        if not rel:
            return "empty_relation"
        if src == dst:
            return "self_loop"
        if any(e.source == src and e.target == dst and e.relation == rel for e in self.edges):
            return "duplicate_edge"
        start, end, _ = self._span(op, text, lo, hi)
        self.edges.append(Edge(src, dst, rel, start, end, chunk))
        return None

    def _edit_node(
        self, op: dict[str, Any], text: str, chunk: int, lo: int, hi: int | None, req: bool
    ) -> str | None:
        node = self.nodes.get(_str(op.get("id")))
        if node is None:
            return "unknown_id"
        content = _str(op.get("content"))
        if not content:
            return "empty_content"
        ntype = _str(op.get("type"))
        if ntype and ntype not in NODE_TYPES:
            return "unknown_type"
        node.content = content
        node.type = ntype or node.type
        if isinstance(op.get("src"), str) and op["src"].strip():
            start, end, _ = self._span(op, text, lo, hi)
            if start is not None:  # a located quote refines the span; else the old one stays
                node.start, node.end = start, end
        return None

    def _delete_node(
        self, op: dict[str, Any], text: str, chunk: int, lo: int, hi: int | None, req: bool
    ) -> str | None:
        nid = _str(op.get("id"))
        if nid not in self.nodes:
            return "unknown_id"
        del self.nodes[nid]
        self.edges = [e for e in self.edges if nid not in (e.source, e.target)]
        return None

    # views ------------------------------------------------------------------------------
    def state(self, last: int | None = None, ids: list[str] | None = None) -> dict[str, Any]:
        """What the prompts show: nodes and edges without offsets (only the ``last``
        nodes added, or the nodes ``ids`` in that order, and the edges among them, when
        given)."""
        nodes = list(self.nodes.values())
        if ids is not None:
            nodes = [self.nodes[i] for i in ids if i in self.nodes]
        elif last is not None:
            nodes = nodes[-last:] if last > 0 else []
        shown = {n.id for n in nodes}
        return {
            "nodes": [{"id": n.id, "type": n.type, "content": n.content} for n in nodes],
            "edges": [
                {"source": e.source, "target": e.target, "relation": e.relation}
                for e in self.edges
                if e.source in shown and e.target in shown
            ],
        }

    def state_json(self, last: int | None = None, ids: list[str] | None = None) -> str:
        return json.dumps(self.state(last, ids), ensure_ascii=False)

    def stats_line(self) -> str:
        """``72 nodes, 154 edges, built from 21 chunks`` (D.2's {graph_stats})."""
        return f"{len(self.nodes)} nodes, {len(self.edges)} edges, built from {self.chunks} chunks"

    def degree(self) -> Counter[str]:
        deg: Counter[str] = Counter({nid: 0 for nid in self.nodes})
        for e in self.edges:
            deg[e.source] += 1
            deg[e.target] += 1
        return deg

    def digest(self) -> str:
        """Hash of the structure (nodes, types, contents, spans, edges): keys caches of
        what is computed from a graph (communities, reports)."""
        payload = json.dumps(
            [
                sorted((n.id, n.type, n.content, n.start, n.end) for n in self.nodes.values()),
                sorted((e.source, e.target, e.relation) for e in self.edges),
            ],
            ensure_ascii=False,
            default=str,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:24]

    def counts(self) -> dict[str, Any]:
        return {
            "nodes": len(self.nodes),
            "edges": len(self.edges),
            "chunks": self.chunks,
            "rejected": dict(self.rejected),
            "provenance": dict(self.provenance),
        }

    # serialisation ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": [asdict(n) for n in self.nodes.values()],
            "edges": [asdict(e) for e in self.edges],
            "chunks": self.chunks,
            "rejected": dict(self.rejected),
            "provenance": dict(self.provenance),
            "applied": dict(self.applied),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConceptGraph:
        g = cls(chunks=int(data.get("chunks", 0)))
        for n in data.get("nodes", []):
            g.nodes[n["id"]] = Node(**n)
        g.edges = [Edge(**e) for e in data.get("edges", [])]
        g.rejected = Counter(data.get("rejected", {}))
        g.provenance = Counter(data.get("provenance", {}))
        g.applied = Counter(data.get("applied", {}))
        return g


def _str(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
