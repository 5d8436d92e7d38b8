"""``personalai-paper``: the paper's pipeline and nothing else. The QA generator reads the
triplets filter's top items as they come (section 3), so the node-type restrictions
(E, T, O) decide what it reads; the appendix prompts in the paper's words; the budgets
the model's. Heuristic tier through ``Memory``; llm tier with a scripted model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memstrata import AsyncMemory, Memory
from memstrata.designs.personalai.builder import graph_cache
from memstrata.designs.personalai.graph import PAGraph
from memstrata.designs.personalai.prompts import QAAnswer
from memstrata.designs.personalai.recipe import PAPER_ROUTE, RECIPES, paper
from memstrata.designs.personalai.route import (
    PersonalAIParams,
    PersonalAIRoute,
    heuristic_entities,
)
from memstrata.engine.contracts import Answer, BuildReport
from memstrata.llm import LLMClient
from memstrata.llm.budgets import Budgets
from memstrata.llm.fence import FENCE_NOTE, unfence
from memstrata.llm.scripted import ScriptedBackend
from memstrata.llm.types import Message

PASSAGES = [
    {"id": "kiss", "text": "Kiss and Tell is a 1945 comedy film starring Shirley Temple."},
    {
        "id": "temple",
        "text": "Shirley Temple was an actress. Shirley Temple served as Chief of Protocol.",
    },
    {"id": "other", "text": "Corliss Archer is a character played by Shirley Temple."},
    {"id": "noise", "text": "The Danube flows through Vienna and Budapest."},
]
QUESTION = "Which position did the star of Kiss and Tell hold?"
BY_KIND = {"simple": "fact", "hyper": "thesis", "episodic": "episode"}


def _restricted(name: str, letters: str) -> dict:
    """``personalai-paper`` with a node-type restriction on both retrievers."""
    r = paper(name, "restricted", ["beam", "watercircles"])
    r.routes[0].params |= {"beam": {"restrict": letters}, "watercircles": {"restrict": letters}}
    return r.model_dump(exclude={"name"})


@pytest.fixture
def memory(tmp_path: Path, embedder):
    recipes = {f"pai-{x}": _restricted(f"pai-{x}", x) for x in ("E", "T", "O")}
    with Memory.open(
        tmp_path / "m.db", embedder=embedder, recipe="personalai-paper", recipes=recipes
    ) as m:
        m.add_many(PASSAGES)
        yield m


def test_the_paper_recipes_are_the_graph_route_alone_with_the_papers_stages() -> None:
    named = {r.name: r for r in RECIPES}
    for name in ("personalai-paper", "personalai-paper-beam"):
        r = named[name]
        assert "paper's pipeline" in r.description
        assert [s.name for s in r.routes] == ["personalai"]  # no System-1
        assert r.routes[0].params["hits"] == "items" and r.fusion.order == "mixed"
        assert r.builders[0].params["prompts"] == "paper"
        assert r.answerer.params["prompts"] == "paper" and r.answerer.params["order"] == "hits"
    for name in ("personalai", "personalai-astar", "personalai-wc", "personalai-beam"):
        assert named[name].description.startswith("Ours (fused)")
        assert [s.name for s in named[name].routes] == ["personalai", "system1"]


def test_the_hits_are_the_filtered_items_in_the_filters_order(memory) -> None:
    """Nothing added (no source passage before the triplets), nothing regrouped by kind:
    the hits are the filter's top k, each item once, an episodic item as its episode."""
    r = memory.search(QUESTION, k=10, recipe="personalai-paper", max_tokens=None)
    ctx = memory.engine.context("default")
    graph = graph_cache(ctx).get("default")
    topo = graph.topology()
    route = PersonalAIRoute(PersonalAIParams(retrievers=["beam", "watercircles"], **PAPER_ROUTE))
    qvec = memory.embedder.embed([QUESTION])[0]
    _, kept = route.retrieve(graph, topo, QUESTION, qvec, heuristic_entities(QUESTION))
    expected = [(BY_KIND[item.kind], item.rid) for item, _ in kept[:10]]
    assert len(expected) == 10
    assert [(h.kind, h.id) for h in r.hits] == expected
    assert {h.kind for h in r.hits} >= {"fact", "thesis"}
    # ours (fused) puts episodes first; the paper's order mixes the kinds by similarity
    fused = memory.search(QUESTION, k=10, recipe="personalai-beam", max_tokens=None)
    assert fused.hits[0].kind == "episode"
    assert [h.kind for h in r.hits] != sorted(
        (h.kind for h in r.hits), key=["episode", "thesis", "fact"].index
    )


@pytest.mark.parametrize(("letters", "barred"), [("E", "episode"), ("T", "thesis")])
def test_a_restriction_keeps_its_node_type_out_of_what_the_answer_reads(
    memory, letters, barred
) -> None:
    """Section 4's E and T: with episodic (or thesis) nodes barred from the traversal, the
    QA generator reads no episode (or thesis); ours would still add the passages the
    kept triplets rest on."""
    full = memory.search(QUESTION, k=20, recipe="personalai-paper", max_tokens=None)
    assert barred in {h.kind for h in full.hits}
    r = memory.search(QUESTION, k=20, recipe=f"pai-{letters}", max_tokens=None)
    assert r.hits and barred not in {h.kind for h in r.hits}
    answer = memory.ask(QUESTION, k=20, recipe=f"pai-{letters}")
    assert answer.hits and barred not in {h.kind for h in answer.hits}


def test_restricting_objects_leaves_the_items_around_the_start_nodes(memory) -> None:
    r = memory.search(QUESTION, k=20, recipe="pai-O", max_tokens=None)
    assert r.hits and {h.kind for h in r.hits} <= {"thesis", "episode"}


def _responder(shown: list[list[Message]]):
    """A model that answers each of the paper's prompts in the paper's line formats."""

    def answer(messages: list[Message]) -> str:
        system, user = messages[0].content, unfence(messages[-1].content)
        shown.append(messages)
        if user.endswith("[Extracted thesises]:"):
            if "Globex" in user:
                return "Maya now works at Globex, ['Maya', 'Globex']"
            return "Maya works at Acme in Lisbon, ['Maya', 'Acme', 'Lisbon']"
        if "[Extracted Triplets]" in user:
            if "Globex" in user:
                return "Maya, works at, Globex"
            return "Maya, works at, Acme; Acme, located in, Lisbon"
        if "list of existing thesises" in user:
            return '["Maya now works at Globex <- Maya works at Acme in Lisbon";]'
        if "list of existing triplets" in user:
            return "[[Maya, works at, Acme -> Maya, works at, Globex],]"
        if user.endswith("[Key entites]:"):
            return "Maya | employer"
        if user.endswith("[Chain of thoughts]:"):
            return "Maya moved from Acme to Globex. [Answer]: Globex"
        raise AssertionError(f"unexpected prompt: {system[:80]}")

    return answer


def test_llm_tier_builds_and_answers_with_the_papers_prompts_and_budgets(
    tmp_path: Path, embedder
) -> None:
    shown: list[list[Message]] = []
    backend = ScriptedBackend([_responder(shown)] * 12)
    budgets = Budgets.of("chat")

    async def run() -> tuple[BuildReport, Answer, PAGraph]:
        async with AsyncMemory.open(
            tmp_path / "m.db",
            embedder=embedder,
            recipe="personalai-paper",
            **{"build.mode": "manual"},
        ) as m:
            m.llm = LLMClient(backend, max_retries=0, budgets=budgets)
            await m.add("Maya works at Acme in Lisbon.", id="e1", occurred_at="2024-01-01")
            await m.add("Maya now works at Globex.", id="e2", occurred_at="2024-03-01")
            (report,) = await m.build(recipe="personalai-paper", tier="llm")
            answer = await m.ask("Where does Maya work?", recipe="personalai-paper")
            return report, answer, graph_cache(m.engine.context("default")).get("default")

    report, answer, graph = asyncio.run(run())
    assert report.episodes == 2 and report.failed == 0
    # Tables 5, 7 and 8 in the paper's words: the instruction of 7 and 8 in the user turn
    systems = [msgs[0].content for msgs in shown]
    assert systems[0].startswith("Objective: The main goal is to meticulously gather")
    assert systems.count("You are a helpful assistant.\n" + FENCE_NOTE) == 2
    old = next(t for t in graph.theses.values() if t.text == "Maya works at Acme in Lisbon")
    assert old.invalid_at is not None  # the reply in Table 7's "new <- old" format
    acme = next(f for f in graph.triplets.values() if f.fact == "Maya works at Acme")
    assert acme.invalid_at is not None and acme.replaced_by  # Table 8's "[[old -> new]]"
    # the query: Table 9, its "a | b" reply split, every entity kept as the model gave it
    assert shown[-2][-1].content.endswith("[Key entites]:")
    # Table 10 reads the hits, every one whole and in order, and the answer is read
    assert answer.text == "Globex" and not answer.abstained
    qa_user = unfence(shown[-1][-1].content)
    listed = qa_user.split("[Contexts]: ", 1)[1].removesuffix("\n[Chain of thoughts]:")
    assert listed == "\n".join(f"- {h.text}" for h in answer.hits)
    assert {h.kind for h in answer.hits} <= {"fact", "thesis", "episode"}
    # budgets: the model's for the query pipeline, the entity parser's included
    asked = [r.max_tokens for r in backend.requests[-2:]]
    assert asked == [budgets.tokens("personalai.qa")] * 2 == [2048, 2048]


def test_paper_wording_needs_the_papers_line_formats() -> None:
    from pydantic import ValidationError

    from memstrata.designs.personalai.answer import QAParams
    from memstrata.designs.personalai.memorize import MemorizeParams

    for params in (MemorizeParams, PersonalAIParams, QAParams):
        with pytest.raises(ValidationError, match="lines"):
            params(prompts="paper")  # type: ignore[call-arg]
        params(prompts="paper", output="lines")  # type: ignore[call-arg]


def test_the_papers_answer_lines_are_read() -> None:
    from memstrata.designs.personalai.replies import parse

    said = parse("Nothing about pets. [Example Answer]: < NotEnoughtInfo >", QAAnswer)
    assert said.abstained
    from memstrata.designs.personalai.prompts import KeyEntities, Theses

    got = parse("Kayla | opinion | video | Xiaomi 10Pro", KeyEntities)
    assert got.entities == ["Kayla", "opinion", "video", "Xiaomi 10Pro"]
    # theses on one line, as Table 5's examples write them
    one_line = "\"Maya works at Acme, ['Maya', 'Acme']\", \"Acme is a studio ['Acme', 'studio'].\""
    theses = parse(one_line, Theses).theses
    assert [(t.thesis, t.nodes) for t in theses] == [
        ("Maya works at Acme", ["Maya", "Acme"]),
        ("Acme is a studio", ["Acme", "studio"]),
    ]
