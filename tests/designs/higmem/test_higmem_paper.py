"""``higmem-paper`` against ``higmem``: the paper's build prompts (no date phrases, a new
event refreshed), q_kw alone as the embedding query, whole turns in the prediction and
filter prompts split to the model's context, T_cand without profile lookups or link
expansion, appendix C's answer prompt; and the recipe on the heuristic tier."""

from __future__ import annotations

import asyncio
from pathlib import Path

from higmem_helpers import NS, ByFamily, add_turns, llm_ctx

from memstrata import Memory
from memstrata.designs.higmem.answer import HiGMemAnswerer, HiGMemAnswerParams, PaperAnswerer
from memstrata.designs.higmem.builder import (
    HiGMemBuilder,
    HiGMemPaperBuilder,
    HiGMemParams,
    layer_cache,
)
from memstrata.designs.higmem.layer import PAPER_BUILDER
from memstrata.designs.higmem.prompts import NOT_MENTIONED, PAPER_ANALYSIS
from memstrata.designs.higmem.recipe import PAPER_ANSWER, PAPER_BUILD, PAPER_ROUTE
from memstrata.designs.higmem.route import GuidedParams, PaperRoute
from memstrata.llm.fence import unfence

LONG = (
    "I finally picked up my new Prius from the dealer, and the whole afternoon went into "
    "paperwork: insurance, the registration, the loan, a warranty talk I did not ask for, "
    "and a test drive around the block with a salesman who would not stop talking about "
    "floor mats. By the time I left it was dark, but the car is quiet, it barely uses any "
    "fuel, and the seats are much better than in my old one. The last words of this turn "
    "are the colour: pearl white."
)
MOVE = (
    "My sister is moving to Denver next month. She found a flat near the park after six "
    "weeks of looking, signed the lease on Tuesday, and now the whole family is invited to "
    "help her carry boxes up four floors, because of course the building has no lift. I "
    "promised to drive the van, which means I will spend the weekend learning to park "
    "something twice the size of my car. She says the view of the mountains makes up for "
    "everything, and from the photos she sent, it might."
)
TURNS = [
    ("s1", "Evan", LONG),
    ("s1", "Sam", "Congrats! How does it handle in city traffic?"),
    ("s1", "Evan", "Smooth and quiet, and it barely uses any fuel."),
    ("s2", "Sam", MOVE),
    ("s2", "Evan", "Denver is lovely in the spring."),
]
QUESTION = "What kind of car does Evan drive?"


def paper_analysis(messages):  # type: ignore[no-untyped-def]
    return {
        "keywords": ["k"],
        "context": "c",
        "timestamp": "2023-05-08",
        "tags": ["t"],
        "profile": [],
        "links": ["W1"] if "W1" in unfence(messages[-1].content) else [],
    }


def same_session(messages):  # type: ignore[no-untyped-def]
    shown = unfence(messages[-1].content)
    return {"events": ["E1"]} if "(recent)" in shown else {"events": ["NEW_EVENT"]}


def sheet(messages):  # type: ignore[no-untyped-def]
    turns = unfence(messages[-1].content).split("Turns:\n", 1)[1]
    return {"summary": f"About: {turns.splitlines()[0][:60]}", "facts": []}


def paper_built(store, embedder):  # type: ignore[no-untyped-def]
    eps = add_turns(store, TURNS, embedder)
    backend = ByFamily({"analysis": paper_analysis, "affiliation": same_session, "refresh": sheet})
    ctx = llm_ctx(store, embedder, backend)
    builder = HiGMemPaperBuilder(HiGMemParams(**PAPER_BUILD))
    assert not asyncio.run(builder.update(ctx, NS, eps)).failed
    return eps, backend, ctx


def test_the_paper_build_sends_the_papers_prompts_and_refreshes_a_new_event(
    store, embedder
) -> None:
    eps, backend, ctx = paper_built(store, embedder)
    assert all(PAPER_ANALYSIS in m[0].content for m in backend.asked["analysis"])
    assert len(backend.asked["analysis"]) == len(eps)
    lay = layer_cache(ctx).get(PAPER_BUILDER, NS)
    assert len(lay.events) == 2  # one per session
    # every turn after the first of its session joins (a refresh each, |E| < τ), and each
    # new event is refreshed too: 5 refreshes in all, where the fused build makes 3
    assert len(backend.asked["refresh"]) == 5
    assert all(e.summary.startswith("About: ") for e in lay.events.values())
    assert all(n.dates == [] for n in lay.notes.values())  # the paper's analysis has none
    assert lay.notes[eps[1].id].links_to == [eps[0].id]


def test_the_fused_build_starts_an_event_without_a_refresh(store, embedder) -> None:
    from higmem_helpers import analysis_reply

    eps = add_turns(store, TURNS, embedder)
    backend = ByFamily({"analysis": analysis_reply, "affiliation": same_session, "refresh": sheet})
    ctx = llm_ctx(store, embedder, backend)
    assert not asyncio.run(HiGMemBuilder().update(ctx, NS, eps)).failed
    assert len(backend.asked["refresh"]) == 3


class Recording:
    """The real embedder, recording what it is asked to embed."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.texts = inner, []

    def __getattr__(self, name):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return self.inner.embed(texts)


# The comparisons below run both settings over the same paper-built records (the route
# ``higmem-paper`` reads them): the settings are the difference under test.
def retrieval(picks):  # type: ignore[no-untyped-def]
    return ByFamily(
        {
            "keywords": lambda m: {"keywords": ["Evan", "Prius", "car"]},
            "predict": lambda m: {"ids": ["T1"]},
            "filter": picks,
        }
    )


def test_q_kw_alone_is_the_embedding_query(store, embedder) -> None:
    paper_built(store, embedder)
    for params, question_embedded in ((PAPER_ROUTE, False), ({}, True)):
        seen = Recording(embedder)
        backend = retrieval(lambda m: {"ids": ["T1"]})
        ctx = llm_ctx(store, seen, backend)
        asyncio.run(PaperRoute(GuidedParams(**params)).search(ctx, NS, [QUESTION], 10))
        assert "Evan Prius car" in seen.texts or question_embedded
        assert any(QUESTION in t for t in seen.texts) == question_embedded


def test_turns_are_shown_whole_to_prediction_and_filter(store, embedder) -> None:
    paper_built(store, embedder)
    for params, whole in ((PAPER_ROUTE, True), ({}, False)):
        backend = retrieval(lambda m: {"ids": ["T1"]})
        ctx = llm_ctx(store, embedder, backend)
        asyncio.run(PaperRoute(GuidedParams(**params)).search(ctx, NS, [QUESTION], 10))
        for step in ("predict", "filter"):
            shown = unfence(backend.asked[step][0][-1].content)
            assert ("pearl white" in shown) == whole, (step, params)
            assert "paperwork" in shown  # within the first 240 characters either way


def test_a_filter_over_the_models_context_goes_in_further_prompts(store, embedder) -> None:
    paper_built(store, embedder)

    def first(messages):  # type: ignore[no-untyped-def]
        listed = unfence(messages[-1].content).split("Candidates:\n", 1)[1]
        return {"ids": [listed.split(" ", 1)[0]]}

    backend = retrieval(first)
    backend.context_tokens = 900  # room for about one long turn a prompt
    ctx = llm_ctx(store, embedder, backend)
    (hits,) = asyncio.run(PaperRoute(GuidedParams(**PAPER_ROUTE)).search(ctx, NS, [QUESTION], 10))
    parts = len(backend.asked["filter"])
    assert parts >= 2
    shown = [unfence(m[-1].content).split("Candidates:\n", 1)[1] for m in backend.asked["filter"]]
    assert sum(s.count("pearl white") for s in shown) == 1  # each candidate once, whole
    assert len(hits) == parts  # each prompt's pick kept: the union of the parts


def test_the_paper_candidates_are_t_semantic_and_t_pred_only(store, embedder) -> None:
    eps, _, _ = paper_built(store, embedder)
    for params, linked in ((PAPER_ROUTE, False), ({"k_turn": 1}, True)):
        backend = ByFamily(
            {
                "keywords": lambda m: {"keywords": ["Denver", "spring"]},
                "predict": lambda m: {"ids": []},
                "filter": lambda m: {"ids": []},
            }
        )
        ctx = llm_ctx(store, embedder, backend)
        p = GuidedParams(**{**params, "k_turn": 1, "k_event": 0})
        asyncio.run(PaperRoute(p).search(ctx, NS, ["Is Denver lovely in the spring?"], 10))
        shown = unfence(backend.asked["filter"][0][-1].content).split("Candidates:\n", 1)[1]
        # T_semantic holds "Denver is lovely"; it links to the sister's turn before it
        assert ("sister is moving" in shown) == linked, params


def test_the_paper_answer_prompt_has_no_abstain_option_and_whole_turns(store, embedder) -> None:
    eps, _, _ = paper_built(store, embedder)
    backend = retrieval(lambda m: {"ids": ["T1"]})
    backend.rules["answer"] = lambda m: {"answer": "a Prius"}
    ctx = llm_ctx(store, embedder, backend)
    (hits,) = asyncio.run(PaperRoute(GuidedParams(**PAPER_ROUTE)).search(ctx, NS, [QUESTION], 10))
    paper = PaperAnswerer(HiGMemAnswerParams(**PAPER_ANSWER))
    ans = asyncio.run(paper.answer(ctx, NS, QUESTION, hits))
    assert ans.text == "a Prius" and not ans.abstained
    system, user = (m.content for m in backend.asked["answer"][-1])
    assert NOT_MENTIONED not in system + user and "pearl white" in unfence(user)
    asyncio.run(HiGMemAnswerer().answer(ctx, NS, QUESTION, hits))
    system, user = (m.content for m in backend.asked["answer"][-1])
    assert NOT_MENTIONED in system and "pearl white" not in unfence(user)
    backend.rules["answer"] = lambda m: {"answer": NOT_MENTIONED}
    adv = asyncio.run(paper.answer_as(ctx, NS, QUESTION, hits, "adversarial", "a Tesla"))
    assert adv.abstained and "Candidate answer: a Tesla" in backend.asked["answer"][-1][1].content


def test_the_paper_recipe_builds_searches_and_answers_on_the_heuristic_tier(
    tmp_path: Path, embedder, sample
) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, embedder=embedder, recipe="higmem-paper", **{"build.mode": "manual"}) as m:
        m.add_many(sample)
        (report,) = m.build()
        assert report.counts["turn_note"] == len(sample) and report.counts["event"] >= 2
        r = m.search("Where is the conference?", k=10, max_tokens=None)
        assert 1 <= len(r.hits) <= 10 and all(h.kind == "episode" for h in r.hits)
        assert all(any(x.startswith(("semantic#", "event ")) for x in h.routes) for h in r.hits)
        answer = m.ask("When is the conference?")
        assert answer.sources or answer.abstained
