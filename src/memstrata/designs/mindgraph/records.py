"""MindGraph's record kinds: concept nodes, the typed edges between them, and the
communities (Leiden groups with their reports)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from pydantic import Field

from memstrata.models import Derived


class ConceptNode(Derived):
    """A MindGraph concept; its sources are the spans of the verbatim quotes it came from.

    ``label`` is what the node is called (a name, a value, a claim's first words; the
    reader's graphs use their readable ids), ``description`` its content;
    ``graph`` names the graph it belongs to ("" for a namespace's own graph)."""

    kind: ClassVar[str] = "concept_node"
    label: str
    description: str = ""
    node_type: str = "concept"
    chunk: int = 0
    graph: str = ""

    def search_text(self) -> str:
        return f"{self.label}: {self.description}" if self.description else self.label

    @classmethod
    def natural_keys(cls, records: Sequence[Derived]) -> Iterable[tuple[str, Any]]:
        """An entity is one per name in its graph; a claim or a number is one per quote
        (two turns may say the same words: two claims, labelled alike)."""
        for r in records:
            if isinstance(r, cls):
                where = () if r.node_type == "entity" or not r.sources else r.sources[0]
                yield "concept_node", (r.graph, r.node_type, r.label.casefold(), where)


class ConceptEdge(Derived):
    """A typed relation between two concept nodes, with its own provenance."""

    kind: ClassVar[str] = "concept_edge"
    source_id: str
    target_id: str
    relation: str = ""
    chunk: int = 0
    graph: str = ""

    links: ClassVar[tuple[tuple[str, str], ...]] = (
        ("source_id", "concept_node"),
        ("target_id", "concept_node"),
    )

    def search_text(self) -> str:
        return self.relation

    @classmethod
    def natural_keys(cls, records: Sequence[Derived]) -> Iterable[tuple[str, Any]]:
        labels = {
            r.id: (r.graph, r.label.casefold()) for r in records if isinstance(r, ConceptNode)
        }
        for r in records:
            if isinstance(r, cls):
                pair = (labels.get(r.source_id, r.source_id), labels.get(r.target_id, r.target_id))
                yield "concept_edge", (r.graph, pair, r.relation)


class Community(Derived):
    """A group of concept nodes (Leiden community) and its cached report."""

    kind: ClassVar[str] = "community"
    level: int = 0
    member_ids: list[str] = Field(default_factory=list)
    report: str = ""
    graph: str = Field(default="", description="hash of the graph it was computed for")
    title: str = ""
    rating: float = 0.0
    findings: list[str] = Field(default_factory=list)

    links: ClassVar[tuple[tuple[str, str], ...]] = (("member_ids", "concept_node"),)

    def search_text(self) -> str:
        return self.report
