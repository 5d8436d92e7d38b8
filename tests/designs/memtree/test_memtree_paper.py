"""``memtree-paper``: the paper's pipeline beside ``memtree`` (ours, fused).

What differs, each checked here: a tree of its own (builder ``memtree-paper``), the
aggregate's n = |C(v)| (children, not leaves beneath), the A.1.2 and A.2.2 prompts as
printed with plain-text replies, collapsed retrieval by cosine alone, and an answer
context of the results in order within 8,192 tokens (A.1.4), handed over whole by
``ask``. The heuristic tier builds and searches it without an LLM.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import numpy as np
import pytest
from memtree_helpers import NS, add_episodes, axis, hand_tree, set_vectors

from memstrata.designs.memtree.answer import (
    PAPER_CONTEXT_TOKENS,
    MemTreeAnswerer,
    MemTreePaperAnswerer,
)
from memstrata.designs.memtree.builder import (
    MemTreeBuilder,
    MemTreePaperBuilder,
    MemTreePaperParams,
    MemTreeParams,
    entries_after,
    plan,
    tree_cache,
)
from memstrata.designs.memtree.recipe import RECIPES
from memstrata.designs.memtree.route import MemTreePaperRoute, MemTreeRoute
from memstrata.designs.memtree.show import show
from memstrata.designs.memtree.tree import BUILDER, PAPER_BUILDER, Tree, tree_problems
from memstrata.designs.memtree.view import VIEWS
from memstrata.engine.contracts import Context
from memstrata.engine.views import ViewQuery
from memstrata.llm import LLMClient
from memstrata.llm.budgets import Budgets
from memstrata.llm.fence import FENCE_NOTE, unfence
from memstrata.llm.scripted import ScriptedBackend
from memstrata.llm.types import Message
from memstrata.memory import Memory
from memstrata.models import Span
from memstrata.retrieval.context import count_tokens
from memstrata.retrieval.documents import episode_hit
from memstrata.store import SQLiteStore

QUERY = "Where is the conference Maya is going to?"
TEXTS = [
    "Maya booked flights to Lisbon for the conference.",
    "Maya's conference talk in Lisbon is about streaming pipelines.",
    "Maya will present sensor data pipelines at the Lisbon conference.",
    "Maya's Lisbon conference slides are due in May.",
    "Maya plans a day trip to Sintra after the Lisbon conference.",
]
ENTRIES = re.compile(r"from (\d+) previous entries")


def summarize(messages: list[Message]) -> str:
    """A scripted aggregate: the reply names the n it was asked with, as JSON for our
    prompt and as plain words for the paper's."""
    user = unfence(messages[-1].content)
    n = ENTRIES.search(user)
    said = f"Summary of {n.group(1) if n else '?'} entries about Lisbon."
    return said if messages[0].content == FENCE_NOTE else f'{{"summary": "{said}"}}'


def asked(backend: ScriptedBackend) -> list[int]:
    return [
        int(ENTRIES.search(unfence(r.messages[-1].content)).group(1))  # type: ignore[union-attr]
        for r in backend.requests
    ]


def test_the_recipe_is_the_papers_pipeline_and_memtree_stays_ours() -> None:
    by_name = {r.name: r for r in RECIPES}
    paper, ours = by_name["memtree-paper"], by_name["memtree"]
    assert "paper's pipeline" in paper.description and "ours (fused)" in ours.description
    assert [b.name for b in paper.builders] == [PAPER_BUILDER]
    assert paper.builders[0].params == {"entries": "children", "prompt": "paper"}
    assert paper.routes[0].name == PAPER_BUILDER and paper.routes[0].params["bm25_weight"] == 0
    assert paper.answerer.params["context_tokens"] == PAPER_CONTEXT_TOKENS == 8192
    assert paper.answerer.context_tokens == 2 * PAPER_CONTEXT_TOKENS  # the fill is the answerer's
    # memtree keeps today's settings: leaves, our prompts, BM25 fused, 10 x 4,000 chars
    assert [b.name for b in ours.builders] == [BUILDER] and ours.builders[0].params == {}
    assert MemTreeParams().entries == "leaves" and MemTreeParams().prompt == "ours"
    assert MemTreeRoute().params.bm25_weight == 1.0 and ours.answerer.context_tokens is None
    p = MemTreeAnswerer().params
    assert (p.max_items, p.max_chars, p.context_tokens, p.prompt) == (10, 4000, None, "ours")
    # the paper's parts default to the paper's settings in a recipe of one's own too
    assert MemTreePaperRoute().params.bm25_weight == 0.0
    assert MemTreePaperParams().entries == "children"
    assert MemTreePaperAnswerer().params.context_tokens == 8192


def test_n_counts_children_in_the_paper_and_leaves_in_ours(embedder) -> None:
    """Section 3.1: n = |C(v)|. Five insertions down one branch (θ = 0): the node at the
    top of it has 4 leaves beneath but 2 or 3 children; ours asks with the leaves, the
    paper's with the children, and everything else (tree shape, calls) is the same."""
    deep = {"theta0": 0.0, "rate": 0.0}
    runs = {}
    for builder in (
        MemTreeBuilder(MemTreeParams(**deep)),
        MemTreePaperBuilder(MemTreePaperParams(**deep)),
    ):
        store = SQLiteStore(":memory:")
        eps = add_episodes(store, TEXTS)
        backend = ScriptedBackend([summarize] * 40)
        ctx = Context(store, embedder, LLMClient(backend, max_retries=0), "llm")
        per_insert = []
        for ep in eps:
            before = len(backend.requests)
            assert asyncio.run(builder.update(ctx, NS, [ep])).failed == {}
            per_insert.append(asked(backend)[before:])
        tree = Tree.load(store, embedder, NS, builder.name)
        assert tree_problems(tree) == [] and len(tree.leaves()) == len(TEXTS)
        runs[builder.name] = (per_insert, backend, tree)
    ours, paper = runs[BUILDER][0], runs[PAPER_BUILDER][0]
    assert [len(c) for c in ours] == [len(c) for c in paper]  # same descent, same calls
    top = runs[PAPER_BUILDER][2]
    # the last insertion: the branch's top node had 4 leaves beneath, fewer children
    assert max(ours[-1]) == 4 and max(paper[-1]) < 4
    # the paper's prompt is A.1.2 as printed, answered in words
    request = runs[PAPER_BUILDER][1].requests[-1]
    assert request.json_schema is None and request.messages[0].content == FENCE_NOTE
    assert "Output the summary directly.\n\n[New Information]" in request.messages[1].content
    assert all(
        top.nodes[n].content.startswith("Summary of") and "{" not in top.nodes[n].content
        for n in top.inner()
    )


def test_n_of_each_node_before_and_after_an_insertion(store, embedder) -> None:
    """``plan``'s n per target and the heuristic budget's n after: the leaves beneath
    (every ancestor gains one) or the children (only the new leaf's parent gains one)."""
    tree = hand_tree(
        store, embedder, {"r": None, "A": "r", "B": "A", "l3": "A", "l1": "B", "l2": "B"}
    )
    v = axis(0, embedder.dim)
    set_vectors(tree, {n: v for n in ("A", "B", "l1", "l2", "l3")}, v)
    span = Span(episode="leaf-0", start=0, end=1)
    ours = plan(tree, "new", span, MemTreeParams(theta0=0.0, rate=0.0))
    paper = plan(tree, "new", span, MemTreePaperParams(theta0=0.0, rate=0.0))
    assert [t[0] for t in ours.targets] == [t[0] for t in paper.targets] == ["A", "B", "l1"]
    assert [t[2] for t in ours.targets] == [3, 2, 1]
    assert [t[2] for t in paper.targets] == [2, 2, 1]  # |C(A)| = |C(B)| = 2; l1 expands
    assert entries_after(ours, "leaves") == [4, 3, 2]
    assert entries_after(paper, "children") == [2, 2, 2]


@pytest.fixture
def both(tmp_path: Path, embedder, sample):
    """One store with both trees built on the heuristic tier."""
    with Memory.open(
        tmp_path / "m.db", embedder=embedder, recipe="memtree-paper", **{"build.mode": "manual"}
    ) as m:
        m.add_many(sample)
        (paper,) = m.build()
        (ours,) = m.build(recipe="memtree")
        assert paper.builder == PAPER_BUILDER and paper.tier == "heuristic" and paper.failed == 0
        assert ours.builder == BUILDER and ours.failed == 0
        yield m


def test_the_paper_tree_is_its_own_and_searched_by_cosine_alone(both: Memory, embedder) -> None:
    m = both
    ctx = m.engine.base
    trees = {b: tree_cache(ctx).get("default", b) for b in (BUILDER, PAPER_BUILDER)}
    owned = {
        b: {r.id for r in m.store.get_records("default", "tree_node", builder=b)} for b in trees
    }
    assert owned[BUILDER] and owned[PAPER_BUILDER] and not owned[BUILDER] & owned[PAPER_BUILDER]
    assert set(trees[PAPER_BUILDER].nodes) == owned[PAPER_BUILDER]
    for tree in trees.values():
        assert (
            tree_problems(tree) == [] and len(tree.leaves()) == m.store.stats("default")[0].episodes
        )

    route = MemTreePaperRoute()  # the recipe's route, with its defaults
    (hits,) = asyncio.run(route.search(ctx, "default", [QUERY], 8))
    tree = trees[PAPER_BUILDER]
    ids, rows = tree.matrix()
    q = np.asarray(embedder.embed([QUERY])[0], dtype=np.float32)
    sims = dict(zip(ids, (rows @ (q / np.linalg.norm(q))).tolist(), strict=True))
    assert len(hits) == 8 and [h.score for h in hits] == sorted(
        (h.score for h in hits), reverse=True
    )
    # every score is a cosine of the paper's tree (no BM25 fused in), the best first
    assert hits[0].score == pytest.approx(max(sims.values()), abs=1e-5)
    node_hits = [h for h in hits if h.kind == "tree_node"]
    assert all(h.id in owned[PAPER_BUILDER] for h in node_hits)
    for h in node_hits:
        assert h.score == pytest.approx(sims[h.id], abs=1e-5)
    fused = asyncio.run(MemTreeRoute().search(ctx, "default", [QUERY], 8))[0]
    assert all(h.id in owned[BUILDER] for h in fused if h.kind == "tree_node")
    assert [h.score for h in fused] != [h.score for h in hits]  # RRF scores, not cosines

    found = m.search(QUERY, k=5)  # through the engine, the recipe's route
    assert found.hits and "Lisbon" in " ".join(h.text for h in found.hits)


def test_show_and_the_explorer_read_each_tree(both: Memory) -> None:
    ctx = both.engine.base
    shown = show(ctx, "default", "root")
    assert shown is not None and [n.text for n in shown] == ["tree memtree", "tree memtree-paper"]
    views = {v.name: v for v in VIEWS}
    paper = views["memtree-paper"].render(ctx, "default", ViewQuery(limit=500))
    ours = views["memtree"].render(ctx, "default", ViewQuery(limit=500))
    ids = {r.id for r in both.store.get_records("default", "tree_node", builder=PAPER_BUILDER)}
    assert {n.id for n in paper.nodes} == ids and not ids & {n.id for n in ours.nodes}


def _long_hits(store: SQLiteStore, n: int, words: int) -> list:
    texts = [
        f"Result {i}: "
        + " ".join(f"Maya talked about item{i}x{j} in Lisbon." for j in range(words))
        for i in range(n)
    ]
    return [episode_hit(ep, 1.0 - i / 100) for i, ep in enumerate(add_episodes(store, texts))]


def _results(request) -> str:  # type: ignore[no-untyped-def]
    user = request.messages[-1].content
    return unfence(user.split("[ Search Results ]", 1)[1].rsplit("[ Output ]", 1)[0]).strip()


def test_the_answer_reads_the_results_in_order_within_8192_tokens(embedder) -> None:
    """A.1.4: the results in order, whole, up to 8,192 tokens; the one that crosses the
    limit cut, the rest left out. Ours shows ten results cut to 4,000 characters each."""
    store = SQLiteStore(":memory:")
    hits = _long_hits(store, 10, 250)  # about 2,000 tokens each
    costs = [count_tokens(h.text) for h in hits]
    assert all(c > 1500 for c in costs) and sum(costs) > 2 * PAPER_CONTEXT_TOKENS
    backend = ScriptedBackend(["In Lisbon.", {"answer": "In Lisbon."}])
    ctx = Context(
        store, embedder, LLMClient(backend, max_retries=0, budgets=Budgets.of("chat")), "llm"
    )

    got = asyncio.run(MemTreePaperAnswerer().answer(ctx, NS, QUESTION_LISBON, hits))
    assert got.text == "In Lisbon." and not got.abstained
    whole = 0
    while sum(costs[: whole + 1]) <= PAPER_CONTEXT_TOKENS:
        whole += 1
    assert 2 <= whole < 10
    shown = _results(backend.requests[0]).split("\n\n")
    assert shown[:whole] == [h.text for h in hits[:whole]]
    assert len(shown) == whole + 1 and shown[-1].endswith("…")
    assert hits[whole].text.startswith(shown[-1][:-1])
    assert (
        PAPER_CONTEXT_TOKENS - 16 <= sum(count_tokens(t) for t in shown) <= PAPER_CONTEXT_TOKENS + 4
    )
    assert got.sources == [h.sources[0] for h in hits[: whole + 1]]
    assert backend.requests[0].json_schema is None  # A.2.2 answered in words

    ours = asyncio.run(MemTreeAnswerer().answer(ctx, NS, QUESTION_LISBON, hits))
    listed = _results(backend.requests[1]).split("\n\n")
    assert ours.text == "In Lisbon." and [t.strip() for t in listed] == [
        h.text[:4000].strip() for h in hits
    ]


QUESTION_LISBON = "Where did Maya talk?"


def test_a_small_window_holds_what_fits(embedder) -> None:
    """The bundled model's 4,096-token window cannot hold 8,192 tokens of results: the
    answer fills what the window leaves beside the prompt and the reply."""
    store = SQLiteStore(":memory:")
    hits = _long_hits(store, 10, 250)
    backend = ScriptedBackend(["In Lisbon."])
    llm = LLMClient(backend, max_retries=0)
    assert llm.budgets.context_tokens == 4096
    asyncio.run(MemTreePaperAnswerer().answer(Context(store, embedder, llm, "llm"), NS, "?", hits))
    used = sum(count_tokens(t) for t in _results(backend.requests[0]).split("\n\n"))
    room = int(0.9 * (4096 - llm.budgets.tokens("memtree.answer")))
    assert 2000 < used <= room


def test_ask_hands_the_paper_answerer_8192_tokens(tmp_path: Path, embedder) -> None:
    """``ask`` fits the hits to the recipe answerer's own budget (16,384 tokens, from
    which the answerer fills its 8,192) rather than the configured 2,000; ``memtree``
    keeps the configured one."""
    texts = [
        f"Maya talked in Lisbon, part {i}: "
        + " ".join(f"detail{i}x{j} of the talk." for j in range(120))
        for i in range(10)
    ]
    with Memory.open(
        tmp_path / "m.db", embedder=embedder, recipe="memtree-paper", **{"build.mode": "manual"}
    ) as m:
        m.add_many([{"text": t} for t in texts])
        m.build()
        m.build(recipe="memtree")
        backend = ScriptedBackend(["In Lisbon.", {"answer": "In Lisbon."}])
        m._inner.llm = LLMClient(backend, max_retries=0, budgets=Budgets.of("chat"))
        assert m.config.budgets.max_tokens == 2000
        paper = m.ask("Where did Maya talk?")
        ours = m.ask("Where did Maya talk?", recipe="memtree")
    tokens = [sum(count_tokens(t) for t in _results(r).split("\n\n")) for r in backend.requests]
    assert paper.text == ours.text == "In Lisbon."
    assert tokens[0] > 3000 and tokens[1] <= 2000
    assert len(paper.hits) > len(ours.hits)


def test_the_llm_tier_builds_and_answers_with_the_papers_prompts(tmp_path: Path, embedder) -> None:
    """Build and answer through the engine with a scripted model: every aggregate and
    the answer are asked in the appendix's words and read as plain text."""

    def reply(messages: list[Message]) -> str:
        user = messages[-1].content
        return "In Lisbon." if "[ Question ]" in user else summarize(messages)

    with Memory.open(
        tmp_path / "m.db", embedder=embedder, recipe="memtree-paper", **{"build.mode": "manual"}
    ) as m:
        m.add_many([{"text": t, "speaker": "Maya"} for t in TEXTS])
        backend = ScriptedBackend([reply] * 40)
        m._inner.llm = LLMClient(backend, max_retries=0)
        (report,) = m.build(tier="llm")
        assert report.builder == PAPER_BUILDER and report.tier == "llm" and report.failed == 0
        calls = len(backend.requests)
        assert calls == report.work["aggregates"] > 0
        tree = tree_cache(m.engine.base).get("default", PAPER_BUILDER)
        assert tree_problems(tree) == [] and len(tree.leaves()) == len(TEXTS)
        assert all(
            re.fullmatch(r"Summary of \d entries about Lisbon\.", tree.nodes[n].content)
            for n in tree.inner()
        )
        answer = m.ask(QUERY)
    assert answer.text == "In Lisbon." and answer.sources and not answer.abstained
    assert all(r.json_schema is None for r in backend.requests)
    assert all(r.messages[0].content == FENCE_NOTE for r in backend.requests)
    assert "Write a high-quality short answer" in backend.requests[calls].messages[1].content
