"""MindGraph's llm tier through the real bundled GGUF model, end to end: the reader on
a 1,500-word document read in three chunks with a question, and the memory recipe on a
few turns. A 135M
model extracts little and answers poorly; what is checked is that every stage runs and
is accounted, the graph is valid (every span is the text of its node's quote, every
edge joins two nodes) and rejected operations are counted."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memstrata.designs.mindgraph.reader import load_graph
from memstrata.designs.mindgraph.records import ConceptNode
from memstrata.engine.contracts import Context
from memstrata.memory import Memory
from memstrata.reading import document_namespace

pytestmark = pytest.mark.slow

PEOPLE = ["Maya", "Tomas", "Ines", "Leo", "Aiko", "Ravi"]
PLACES = ["Lisbon", "Porto", "Toronto", "Sines", "Kyoto", "Lyon"]
DOINGS = [
    "walked along the harbour with {p}",
    "wrote a long letter about the storm to {p}",
    "repaired the old boat engine for {p}",
    "cooked a fish stew for {p} and the neighbours",
    "argued with {p} about the price of the nets",
]


def long_document(words: int = 1500, seed: int = 3) -> str:
    rng = random.Random(seed)
    lines: list[str] = []
    day = 1
    while sum(len(line.split()) for line in lines) < words:
        who, other = rng.sample(PEOPLE, 2)
        place = rng.choice(PLACES)
        doing = rng.choice(DOINGS).format(p=other)
        lines.append(
            f"On day {day}, {who} {doing} in {place}, spending {rng.randint(2, 90)} euros."
        )
        if day == 40:
            lines.append("The lighthouse keeper hid the brass key under the third step in Porto.")
        day += 1
    return "\n".join(lines)


def test_reader_llm_tier_on_a_document_of_several_chunks(tmp_path: Path, embedder) -> None:
    doc = long_document()
    assert len(doc.split()) >= 1500
    params = {
        "chunk_tokens": 768,
        "build_max_tokens": 256,
        "answer_max_tokens": 128,
        "state_nodes": 12,
        "max_rounds": 2,
    }
    with Memory.open(tmp_path / "m.db", embedder=embedder, llm={"kind": "gguf"}) as m:
        r = m.read(
            doc, "Where did the lighthouse keeper hide the brass key?", tier="llm", params=params
        )
        g = r.graph
        assert g["chunks"] >= 3 and g["nodes"] + sum(g["rejected"].values()) > 0
        ns = document_namespace(doc)
        graph = load_graph(Context(m.store, embedder), ns, g["key"])
        assert graph is not None and len(graph.nodes) == g["nodes"]
        for n in graph.nodes.values():
            assert n.start is None or 0 <= n.start < n.end <= len(doc)
        assert all(e.source in graph.nodes and e.target in graph.nodes for e in graph.edges)
        # every operation is accounted: applied, or rejected with its reason
        assert sum(graph.applied.values()) + sum(g["rejected"].values()) > 0
        assert sum(graph.provenance.values()) >= sum(1 for n in graph.nodes.values() if n.start)
        stages = r.usage["stages"]
        assert stages["mindgraph.build"]["calls"] == g["chunks"]
        assert stages["mindgraph.answer"]["calls"] >= 1 and r.usage["rounds"]
        assert r.usage["first_call_prompt_tokens"] > 0
        assert r.answer is not None or r.details.get("answer_error")
        assert r.compaction_ratio > 0
        for w in r.windows:
            assert doc[w.start : w.end] == w.text
        print(  # the figures of docs/mindgraph.md
            f"\nGGUF reader: {len(doc.split())} words, {g['chunks']} chunks, {g['nodes']} nodes, "
            f"{g['edges']} edges, applied {dict(graph.applied)}, rejected {g['rejected']}, "
            f"provenance {g['provenance']}, rounds {len(r.usage['rounds'])}, "
            f"tools {r.details.get('tool_calls')}, answer {r.answer!r}, "
            f"compaction {r.compaction_ratio}, error {r.details.get('answer_error')}"
        )
        # the second time the graph is read from the store, no build call
        again = m.read(
            doc,
            "Where did the lighthouse keeper hide the brass key?",
            tier="llm",
            params=params,
            graph_only=True,
        )
        assert again.graph["cached"] and again.graph["key"] == g["key"]


# A ceiling on the memory recipe's build reply (``llm.max_tokens``): with this model the
# D.1 reply over six turns ran to the stage's 2,048-token budget; a reply cut at the
# ceiling is closed and parsed like any cut reply.
CEILING = 256
OUTCOMES = ("applied", "rejected")


def test_memory_recipe_llm_tier(tmp_path: Path, embedder) -> None:
    from test_mindgraph_memory import sample as turns

    with Memory.open(
        tmp_path / "m.db",
        embedder=embedder,
        llm={"kind": "gguf", "max_tokens": CEILING},
        recipe="mindgraph",
        **{"build.mode": "manual"},
    ) as m:
        m.add_many(turns()[:6])
        (report,) = m.build(tier="llm")
        assert report.tier == "llm" and report.episodes == 6
        assert report.llm["mindgraph.build"]["calls"] >= 1
        # the model's operations are each accounted: taken, or refused with a reason
        accounted = {k: v for k, v in report.work.items() if k.split(".")[0] in OUTCOMES}
        assert sum(accounted.values()) > 0, report.work
        texts = {e.id: e.text for e in m.get([t["id"] for t in turns()[:6]])}
        for n in m.store.get_records("default", "concept_node", builder=None):
            assert isinstance(n, ConceptNode) and n.sources
            for s in n.sources:
                assert 0 <= s.start < s.end <= len(texts[s.episode])
        r = m.search("Where is the conference?", k=3, max_tokens=None)
        assert all(h.sources for h in r.hits)


def test_memory_ask_runs_the_tool_loop_through_the_model(tmp_path: Path, embedder) -> None:
    """``ask`` on the memory recipe: the D.2 tool loop over the graph of the turns found,
    through the bundled model (the graph built on the heuristic tier, so it surely has
    nodes; one round of tools, so the small model's loop ends in bounded time)."""
    from test_mindgraph_memory import sample as turns

    with Memory.open(tmp_path / "m.db", embedder=embedder, recipe="mindgraph") as m:
        m.add_many(turns()[:3])
    short = {
        "builders": [{"name": "mindgraph"}],
        "routes": [{"name": "mindgraph"}],
        "answerer": {"name": "mindgraph", "params": {"max_rounds": 1, "max_tokens": 256}},
    }
    with Memory.open(
        tmp_path / "m.db",
        embedder=embedder,
        llm={"kind": "gguf"},
        recipes={"short": short},
        **{"retrieval.tier": "heuristic", "build.mode": "manual"},
    ) as m:
        answer = m.ask("Where is the conference?", k=3, recipe="short")
        stages = m.stats()["llm"]
        assert stages["mindgraph.answer"]["calls"] >= 1  # the loop ran through the model
        assert answer.text and answer.hits
        if not answer.abstained:
            assert set(answer.sources) <= {s for h in answer.hits for s in h.sources}
