"""MindGraph after a delete or an update: no concept node, edge or report keeps removed text.

The store's cascade took the nodes and edges whose every quote was in a removed episode.
Here, on both tiers (no LLM call):

* a **reading** (the graph ``memstrata read`` keeps per question, ``graph != ""``) that
  cited a removed episode goes whole: it is a cache, rebuilt on the next question, and
  some of its records (its header, nodes whose quote was not found) cite nothing;
* a **node** of the namespace's graph whose description or label says a word only the
  removed text had: an entity node takes the wording of its first remaining mention;
  another node is described by the verbatim quotes it has left; a node whose label (its
  identity in the graph) carries such a word goes;
* an **edge** goes with either end, or when its relation says a word that neither its
  quote nor its ends say; a **community** report goes with a member or a leaked word.
"""

from __future__ import annotations

from memstrata.designs.mindgraph.graph import BUILDER
from memstrata.designs.mindgraph.records import Community, ConceptEdge, ConceptNode
from memstrata.engine.removal import episodes_by_id, leaked, removed_terms, said_by
from memstrata.models import Derived
from memstrata.retrieval.text import content_terms
from memstrata.store.base import Repairs, Store

QUOTES_CHARS = 300


def repair_records(store: Store, namespace: str, work: Repairs) -> None:
    """Re-derive or drop, then write, in one transaction."""
    removed = removed_terms(work)
    nodes = [r for r in store.get_records(namespace, "concept_node", builder=BUILDER)]
    edges = [r for r in store.get_records(namespace, "concept_edge", builder=BUILDER)]
    reports = [r for r in store.get_records(namespace, "community", builder=BUILDER)]
    every: list[Derived] = [*nodes, *edges, *reports]
    readings = {_graph(r) for r in work.dropped if _graph(r)}
    readings |= {_graph(r) for r in every if r.id in work.changed and _graph(r)}
    gone = {r.id for r in every if _graph(r) in readings}
    put: dict[str, Derived] = {}

    def suspect(rec: Derived, text: str) -> bool:
        return rec.id not in gone and (
            rec.id in work.changed or bool(removed & set(content_terms(text)))
        )

    mine = [n for n in nodes if isinstance(n, ConceptNode) and suspect(n, _node_text(n))]
    episodes = episodes_by_id(store, namespace, (s.episode for n in mine for s in n.sources))
    for node in mine:
        kept = said_by(node.sources, episodes)
        if not leaked(_node_text(node), removed, kept):
            continue
        if leaked(node.label, removed, kept) and node.node_type != "entity":
            gone.add(node.id)
            continue
        quotes = [
            episodes[s.episode].text[s.start : s.end].strip()
            for s in node.sources
            if s.episode in episodes
        ]
        quotes = [q for q in dict.fromkeys(quotes) if q]
        if node.node_type == "entity" and quotes:
            node.description = quotes[0]
        else:
            node.description = " … ".join(quotes)[:QUOTES_CHARS]
        put[node.id] = node
    alive = {n.id: n for n in nodes if n.id not in gone}
    for edge in edges:
        if edge.id in gone or not isinstance(edge, ConceptEdge):
            continue
        ends = [alive.get(edge.source_id), alive.get(edge.target_id)]
        if any(e is None for e in ends):
            gone.add(edge.id)
        elif suspect(edge, edge.relation):
            said = [_node_text(e) for e in ends if isinstance(e, ConceptNode)]
            episodes.update(episodes_by_id(store, namespace, (s.episode for s in edge.sources)))
            if leaked(edge.relation, removed, [*said_by(edge.sources, episodes), *said]):
                gone.add(edge.id)
    text_of = {n.label: _node_text(n) for n in alive.values() if isinstance(n, ConceptNode)}
    for rep in reports:
        if rep.id in gone or not isinstance(rep, Community):
            continue
        said = [text_of[m] for m in rep.member_ids if m in text_of]
        text = " ".join([rep.title, rep.report, *rep.findings])
        if not set(rep.member_ids) <= set(text_of) or leaked(text, removed, said):
            gone.add(rep.id)
    store.write_records(
        namespace, [r for i, r in put.items() if i not in gone], sorted(gone), owner=BUILDER
    )


def _graph(rec: Derived) -> str:
    return str(getattr(rec, "graph", "") or "")


def _node_text(node: ConceptNode) -> str:
    return f"{node.label.replace('_', ' ')} {node.description}"
