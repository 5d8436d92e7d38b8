"""LLM-guided retrieval with a scripted model: query keywords, event-local prediction of
turns that T_semantic missed, the filter keeping a subset, fall-backs when a call fails;
and the answerer's category-aware prompt."""

from __future__ import annotations

import asyncio
import json
import re

import pydantic
import pytest
from higmem_helpers import NS, ByFamily, add_turns, analysis_reply, family, llm_ctx

from memstrata.designs.higmem.answer import HiGMemAnswerer, question_kind
from memstrata.designs.higmem.builder import HiGMemBuilder
from memstrata.designs.higmem.prompts import NOT_MENTIONED, affiliation
from memstrata.designs.higmem.route import GuidedParams, GuidedRoute
from memstrata.engine.contracts import QuestionInfo
from memstrata.llm.fence import unfence

TURNS = [
    ("s1", "Evan", "I finally picked up my new Prius from the dealer."),
    ("s1", "Sam", "Congrats! How does it handle in city traffic?"),
    ("s1", "Evan", "Smooth and quiet, and it barely uses any fuel."),
    ("s2", "Sam", "My sister is moving to Denver next month."),
    ("s2", "Evan", "Denver is lovely in the spring."),
]
QUESTION = "What kind of car does Evan drive?"


def one_event(messages):  # type: ignore[no-untyped-def]
    return (
        {"events": ["E1"]}
        if "(recent)" in unfence(messages[-1].content)
        else {"events": ["NEW_EVENT"]}
    )


def sheet(messages):  # type: ignore[no-untyped-def]
    return {"summary": "Evan bought a new Prius car and likes driving it.", "facts": []}


def built(store, embedder):  # type: ignore[no-untyped-def]
    eps = add_turns(store, TURNS, embedder)
    backend = ByFamily({"analysis": analysis_reply, "affiliation": one_event, "refresh": sheet})
    ctx = llm_ctx(store, embedder, backend)
    assert not asyncio.run(HiGMemBuilder().update(ctx, NS, eps)).failed
    return eps


def shown_id(messages, text: str) -> str:  # type: ignore[no-untyped-def]
    for line in unfence(messages[-1].content).splitlines():
        if text in line:
            return line.strip().split(" ", 1)[0]
    raise AssertionError(f"{text!r} was not shown")


def test_event_prediction_adds_turns_and_the_filter_keeps_a_subset(store, embedder) -> None:
    eps = built(store, embedder)

    def predict(messages):  # type: ignore[no-untyped-def]
        assert "Evan bought a new Prius" in unfence(
            messages[-1].content
        )  # the event summary is read
        ids = [shown_id(messages, "Prius from the dealer"), shown_id(messages, "any fuel")]
        return {"ids": ids + ["T77"]}

    def keep(messages):  # type: ignore[no-untyped-def]
        assert "Denver" not in unfence(messages[-1].content)  # T_semantic (1 turn) and T_pred only
        return {
            "ids": [shown_id(messages, "any fuel"), shown_id(messages, "Prius from the dealer")]
        }

    backend = ByFamily(
        {"keywords": lambda m: {"keywords": ["Evan", "car"]}, "predict": predict, "filter": keep}
    )
    ctx = llm_ctx(store, embedder, backend)
    route = GuidedRoute(GuidedParams(k_turn=1))  # T_semantic holds one turn only
    (hits,) = asyncio.run(route.search(ctx, NS, [QUESTION], 10))
    assert [h.id for h in hits] == [eps[2].id, eps[0].id]  # in the filter's order
    for h in hits:  # both came from the event, whatever T_semantic held
        assert [r for r in h.routes if r.startswith("event ")] and h.metadata["events"]
    listed = unfence(backend.asked["filter"][0][-1].content).split("Candidates:\n")[1].splitlines()
    assert 2 <= len(listed) <= 3  # T_semantic's one turn and the two predicted, once each
    assert set(backend.asked) == {"keywords", "predict", "filter"}
    assert "Question: " + QUESTION in unfence(backend.asked["keywords"][0][-1].content)


def test_failed_retrieval_calls_fall_back_and_a_cap_of_k(store, embedder) -> None:
    built(store, embedder)
    backend = ByFamily(
        {
            "keywords": lambda m: "garbage",
            "predict": lambda m: "garbage",
            "filter": lambda m: "garbage",
        }
    )
    ctx = llm_ctx(store, embedder, backend)
    (hits,) = asyncio.run(GuidedRoute().search(ctx, NS, [QUESTION], 3))
    assert 1 <= len(hits) <= 3  # the candidates in order, cut at k
    assert {k: len(v) for k, v in backend.asked.items()} == {
        "keywords": 1,
        "predict": 1,
        "filter": 1,
    }


def test_an_empty_filter_keeps_the_best_candidate_and_no_events_in_the_ablation(
    store, embedder
) -> None:
    eps = built(store, embedder)
    backend = ByFamily({"keywords": lambda m: {"keywords": []}, "filter": lambda m: {"ids": []}})
    ctx = llm_ctx(store, embedder, backend)
    (hits,) = asyncio.run(
        GuidedRoute(GuidedParams(use_events=False)).search(ctx, NS, [QUESTION], 10)
    )
    assert len(hits) == 1 and hits[0].routes == ["semantic#1"]
    assert "predict" not in backend.asked
    assert hits[0].id in {e.id for e in eps}


def test_the_answerer_is_category_aware(store, embedder) -> None:
    eps = built(store, embedder)
    backend = ByFamily({"answer": lambda m: {"answer": "a Prius"}})
    ctx = llm_ctx(store, embedder, backend)
    (hits,) = asyncio.run(
        GuidedRoute(GuidedParams(use_events=False, k_turn=2)).search(
            Context_heuristic(ctx), NS, [QUESTION], 10
        )
    )
    ans = asyncio.run(HiGMemAnswerer().answer(ctx, NS, QUESTION, hits))
    assert ans.text == "a Prius" and ans.sources and not ans.abstained
    assert "exact words" in backend.asked["answer"][0][0].content
    assert question_kind("When did Sam's sister move?") == "temporal"
    backend.rules["answer"] = lambda m: {"answer": NOT_MENTIONED}
    adv = asyncio.run(
        HiGMemAnswerer().answer_as(
            ctx, NS, "What car does Sam drive?", hits, "adversarial", "a Prius"
        )
    )
    assert adv.abstained and adv.sources == []
    system = backend.asked["answer"][-1][0].content
    assert "'a Prius'" in system and NOT_MENTIONED in system
    when = asyncio.run(HiGMemAnswerer().answer(ctx, NS, "When did Evan get his car?", hits))
    assert "dialogue timeline" in backend.asked["answer"][-1][0].content
    assert when.abstained
    backend.rules["answer"] = lambda m: "Sam's turn names the car.\nFinal answer: a Prius"
    said = asyncio.run(HiGMemAnswerer().answer(ctx, NS, QUESTION, hits))
    assert said.text == "a Prius" and said.sources == ans.sources  # prose read, not failed
    assert eps


def Context_heuristic(ctx):  # type: ignore[no-untyped-def]
    return ctx.with_tier("heuristic", None)


def test_what_an_evaluation_knows_picks_the_branch(store, embedder) -> None:
    """The data set's category reaches the answerer (bench qa passes it): adversarial with
    its trap answer, temporal for a question that does not start with "when"."""
    built(store, embedder)
    backend = ByFamily({"answer": lambda m: {"answer": NOT_MENTIONED}})
    ctx = llm_ctx(store, embedder, backend)
    hits = asyncio.run(
        GuidedRoute(GuidedParams(use_events=False, k_turn=2)).search(
            Context_heuristic(ctx), NS, [QUESTION], 10
        )
    )[0]
    trap = QuestionInfo(category="adversarial", candidate="a Prius")
    adv = asyncio.run(HiGMemAnswerer().answer(ctx, NS, "What car does Sam drive?", hits, trap))
    assert adv.abstained
    assert "'a Prius'" in backend.asked["answer"][-1][0].content
    dated = QuestionInfo(category="temporal")
    asyncio.run(HiGMemAnswerer().answer(ctx, NS, "Evan got his car on which day?", hits, dated))
    assert "dialogue timeline" in backend.asked["answer"][-1][0].content
    asyncio.run(HiGMemAnswerer().answer(ctx, NS, "Evan got his car on which day?", hits))
    assert "exact words" in backend.asked["answer"][-1][0].content  # no category: read off


def test_the_affiliation_prompt_and_schema_state_max_join() -> None:
    for join in (1, 2, 3):
        (system, _), model = affiliation("a turn", [("E1", "an event", True)], join)
        assert f"at most {join})" in system.content
        assert model.model_json_schema()["properties"]["events"]["maxItems"] == join


def test_the_filters_evidence_set_is_kept_by_the_route_and_cut_to_k_by_the_search(
    store, embedder
) -> None:
    from memstrata.designs.higmem.recipe import RECIPES
    from memstrata.engine.fusion import cut

    eps = built(store, embedder)

    def keep_all(messages):  # type: ignore[no-untyped-def]
        listed = unfence(messages[-1].content).split("Candidates:\n")[1].splitlines()
        return {"ids": [line.split(" ", 1)[0] for line in listed]}

    backend = ByFamily({"keywords": lambda m: {"keywords": []}, "filter": keep_all})
    ctx = llm_ctx(store, embedder, backend)
    route = GuidedRoute(GuidedParams(k_turn=5, use_events=False))
    (hits,) = asyncio.run(route.search(ctx, NS, [QUESTION], 2))
    assert len(hits) == len(eps) == 5  # k = 2 asked; the filter kept all five
    # ... and a search returns k hits whatever the recipe: the filter's first two
    (recipe,) = [r for r in RECIPES if r.name == "higmem"]
    assert cut(hits, recipe.fusion, 2) == hits[:2]
    assert cut(hits, recipe.fusion, 5) == hits


def test_the_filter_schema_is_bounded_by_what_it_shows_not_by_twenty() -> None:
    from memstrata.designs.higmem.prompts import evidence_filter

    shown = [(f"T{i}", f"[2023-05-0{i % 9 + 1}] Evan: turn {i}") for i in range(1, 31)]
    _, model = evidence_filter(QUESTION, shown)
    assert len(model.model_validate({"ids": [t for t, _ in shown[:25]]}).ids) == 25
    with pytest.raises(pydantic.ValidationError):
        model.model_validate({"ids": [f"T{i}" for i in range(1, 32)]})


def test_the_evidence_reaches_the_answer_in_time_order_not_text_order(store, embedder) -> None:
    eps = built(store, embedder)
    backend = ByFamily({"answer": lambda m: {"answer": "a Prius"}})
    ctx = llm_ctx(store, embedder, backend)
    from memstrata.retrieval.documents import episode_hit

    late, early = eps[3], eps[0]  # s2's first turn was said after s1's first
    hits = [episode_hit(late, 1.0), episode_hit(early, 0.5)]
    hits[0].text, hits[1].text = "A: " + late.text, "Z: " + early.text  # text order: late first
    asyncio.run(HiGMemAnswerer().answer(ctx, NS, QUESTION, hits))
    shown = unfence(backend.asked["answer"][-1][-1].content)
    assert shown.index(early.text) < shown.index(late.text)


def test_prediction_sees_every_turn_of_an_event_in_prompts_of_bounded_size(store, embedder) -> None:
    """No pre-selection by cosine (the paper shows the event's turns): all twelve turns
    of the one event are shown, across prompts when they exceed ``predict_chars``."""
    turns = [
        ("s1", "Evan" if i % 2 else "Sam", f"Car talk number {i}: the Prius again.")
        for i in range(12)
    ]
    eps = add_turns(store, turns, embedder)
    backend = ByFamily({"analysis": analysis_reply, "affiliation": one_event, "refresh": sheet})
    ctx = llm_ctx(store, embedder, backend)
    assert not asyncio.run(HiGMemBuilder().update(ctx, NS, eps)).failed

    def listed(messages):  # type: ignore[no-untyped-def]
        return re.findall(r"^\s*(T\d+) ", unfence(messages[-1].content), flags=re.M)

    for budget, calls in ((6000, 1), (600, 2)):
        backend = ByFamily(
            {
                "keywords": lambda m: {"keywords": []},
                "predict": lambda m: {"ids": []},
                "filter": lambda m: {"ids": []},
            }
        )
        ctx = llm_ctx(store, embedder, backend)
        params = GuidedParams(k_turn=1, predict_chars=budget)
        asyncio.run(GuidedRoute(params).search(ctx, NS, [QUESTION], 10))
        asked = backend.asked["predict"]
        assert len(asked) >= calls
        shown = [sid for messages in asked for sid in listed(messages)]
        assert len(shown) == len(set(shown)) == 12  # every turn, once
        assert all("Evan bought a new Prius" in unfence(m[-1].content) for m in asked)


def test_prediction_and_filter_have_room_to_name_every_turn_they_show(
    store, embedder, model_tokens
) -> None:
    """The model may keep every turn it is shown: each prediction and filter call's
    completion budget holds the reply that names them all, counted in the bundled
    model's tokens (the old fixed budget of 120 cut a list of 30 ids at about 24)."""
    turns = [
        ("s1", "Evan" if i % 2 else "Sam", f"Car talk number {i}: the Prius again.")
        for i in range(40)
    ]
    eps = add_turns(store, turns, embedder)
    backend = ByFamily({"analysis": analysis_reply, "affiliation": one_event, "refresh": sheet})
    assert not asyncio.run(
        HiGMemBuilder().update(llm_ctx(store, embedder, backend), NS, eps)
    ).failed

    def listed(messages):  # type: ignore[no-untyped-def]
        return re.findall(r"^\s*(T\d+) ", unfence(messages[-1].content), flags=re.M)

    def keep_all(messages):  # type: ignore[no-untyped-def]
        return {"ids": listed(messages)}

    backend = ByFamily(
        {"keywords": lambda m: {"keywords": []}, "predict": keep_all, "filter": keep_all}
    )
    ctx = llm_ctx(store, embedder, backend)
    (hits,) = asyncio.run(GuidedRoute(GuidedParams(k_turn=1)).search(ctx, NS, [QUESTION], 10))
    assert len(hits) == 30  # the filter was shown max_candidates and kept them all
    asked = [r for r in backend.requests if family(r.messages) in ("predict", "filter")]
    assert {family(r.messages) for r in asked} == {"predict", "filter"}
    for request in asked:
        reply = json.dumps({"ids": listed(request.messages)})
        assert len(listed(request.messages)) >= 30
        assert request.max_tokens >= model_tokens(reply)


def test_t_semantic_by_cosine_over_the_turn_nodes(store, embedder) -> None:
    """Eq. 2 over the turn nodes T_t = (D_t, M_t): the turn with the keywords its analysis
    wrote. Sam's "How does it handle in city traffic?" names no car; with the keywords
    its analysis gives it (Evan's car, hybrid car, driving) it is the node closest to the
    question, where the turns' texts alone put Evan's fuel remark first."""
    eps = add_turns(store, TURNS, embedder)

    def analysed(messages):  # type: ignore[no-untyped-def]
        reply = analysis_reply(messages)
        if "city traffic" in unfence(messages[-1].content).split("Current turn:")[1]:
            reply["keywords"] = ["Evan's car", "hybrid car", "driving"]
        return reply

    backend = ByFamily({"analysis": analysed, "affiliation": one_event, "refresh": sheet})
    assert not asyncio.run(
        HiGMemBuilder().update(llm_ctx(store, embedder, backend), NS, eps)
    ).failed
    backend = ByFamily({"keywords": lambda m: {"keywords": []}, "filter": lambda m: {"ids": []}})
    ctx = llm_ctx(store, embedder, backend)
    route = GuidedRoute(GuidedParams(semantic="cosine", use_events=False))
    (hits,) = asyncio.run(route.search(ctx, NS, [QUESTION], 10))
    q = embedder.embed([QUESTION])[0]
    by_text = max(eps, key=lambda e: float(embedder.embed([f"{e.speaker}: {e.text}"])[0] @ q))
    assert "fuel" in by_text.text  # the texts alone rank the fuel remark first
    assert "city traffic" in store.get_episodes(NS, [hits[0].id])[0].text
    assert hits[0].routes == ["semantic#1"]  # the filter kept nothing: the best stays


def _keep_all(messages):  # type: ignore[no-untyped-def]
    listed = unfence(messages[-1].content).split("Candidates:\n")[1].splitlines()
    return {"ids": [line.split(" ", 1)[0] for line in listed]}


def _with_keys(store, embedder):  # type: ignore[no-untyped-def]
    """TURNS built with profile keys and one direct link: the Prius turn says something
    lasting about Evan's car, Sam's question about cars is Sam's, and the reply about
    how the car handles links to the question it answers."""
    keys = {
        "Prius from the dealer": ["Evan: car"],
        "How does it handle": ["Sam: car"],
        "sister is moving": ["Sam: family"],
    }

    def analysed(messages):  # type: ignore[no-untyped-def]
        reply = analysis_reply(messages)
        turn = unfence(messages[-1].content).split("Current turn:\n", 1)[1]
        reply["profile"] = next((v for k, v in keys.items() if k in turn), [])
        reply["links"] = ["W2"] if "Smooth and quiet" in turn else []
        return reply

    eps = add_turns(store, TURNS, embedder)
    backend = ByFamily({"analysis": analysed, "affiliation": one_event, "refresh": sheet})
    assert not asyncio.run(
        HiGMemBuilder().update(llm_ctx(store, embedder, backend), NS, eps)
    ).failed
    return eps


def test_profile_keys_bring_the_turns_about_the_person_and_attribute_asked(store, embedder) -> None:
    eps = _with_keys(store, embedder)
    backend = ByFamily({"keywords": lambda m: {"keywords": ["car"]}, "filter": _keep_all})
    ctx = llm_ctx(store, embedder, backend)
    params = GuidedParams(k_turn=1, use_events=False, link_expansion=False)
    (hits,) = asyncio.run(GuidedRoute(params).search(ctx, NS, ["Which car did Evan buy?"], 10))
    by_id = {h.id: h for h in hits}
    assert "profile" in by_id[eps[0].id].routes  # Evan: car
    assert eps[1].id not in by_id or "profile" not in by_id[eps[1].id].routes  # Sam's key
    assert eps[3].id not in by_id  # Evan named, but "family" is not asked
    # Off: only T_semantic's one turn reaches the filter.
    backend = ByFamily({"keywords": lambda m: {"keywords": ["car"]}, "filter": _keep_all})
    off = GuidedParams(k_turn=1, use_events=False, link_expansion=False, k_profile=0)
    (hits,) = asyncio.run(
        GuidedRoute(off).search(
            llm_ctx(store, embedder, backend), NS, ["Which car did Evan buy?"], 10
        )
    )
    assert len(hits) == 1 and all("profile" not in h.routes for h in hits)


def test_a_possessive_names_the_person_of_a_profile_key(store, embedder) -> None:
    """ "Evan's car" asks about Evan: the possessive is not part of the name, so the
    turn keyed "Evan: car" is found by its profile key (the query's keywords are empty:
    the words are the question's own)."""
    eps = _with_keys(store, embedder)
    for question in ("What colour is Evan's car?", "What colour is Evan’s car?"):
        backend = ByFamily({"keywords": lambda m: {"keywords": []}, "filter": _keep_all})
        params = GuidedParams(k_turn=1, use_events=False, link_expansion=False)
        ctx = llm_ctx(store, embedder, backend)
        (hits,) = asyncio.run(GuidedRoute(params).search(ctx, NS, [question], 10))
        by_id = {h.id: h for h in hits}
        assert eps[0].id in by_id and "profile" in by_id[eps[0].id].routes, question


def test_link_expansion_brings_the_question_a_reply_answers_and_back(store, embedder) -> None:
    eps = _with_keys(store, embedder)
    question, reply = eps[1], eps[2]
    for query, seed, brought in (
        ("Was the car smooth and quiet?", reply, question),
        ("Congrats! How does it handle in city traffic?", question, reply),
    ):
        backend = ByFamily({"keywords": lambda m: {"keywords": []}, "filter": _keep_all})
        params = GuidedParams(k_turn=1, use_events=False, k_profile=0)
        ctx = llm_ctx(store, embedder, backend)
        (hits,) = asyncio.run(GuidedRoute(params).search(ctx, NS, [query], 10))
        by_id = {h.id: h for h in hits}
        assert by_id[seed.id].routes == ["semantic#1"]
        assert by_id[brought.id].routes == [f"link {seed.id[:8]}"]
        backend = ByFamily({"keywords": lambda m: {"keywords": []}, "filter": _keep_all})
        params = GuidedParams(k_turn=1, use_events=False, k_profile=0, link_expansion=False)
        ctx = llm_ctx(store, embedder, backend)
        (hits,) = asyncio.run(GuidedRoute(params).search(ctx, NS, [query], 10))
        assert [h.id for h in hits] == [seed.id]


def test_prediction_reads_each_events_fact_sheet_naming_the_shown_turns(store, embedder) -> None:
    eps = add_turns(store, TURNS, embedder)

    def dated_sheet(messages):  # type: ignore[no-untyped-def]
        listed = unfence(messages[-1].content).split("Turns:\n")[1].splitlines()
        prius = [line.split(" ", 1)[0] for line in listed if "Prius" in line]
        fact = {"when": "2023-05-08", "fact": "Evan picked up a Prius", "turns": prius}
        return {"summary": "Evan bought a new Prius car.", "facts": [fact] if prius else []}

    backend = ByFamily(
        {"analysis": analysis_reply, "affiliation": one_event, "refresh": dated_sheet}
    )
    assert not asyncio.run(
        HiGMemBuilder().update(llm_ctx(store, embedder, backend), NS, eps)
    ).failed
    seen: list[str] = []

    def predict(messages):  # type: ignore[no-untyped-def]
        seen.append(unfence(messages[-1].content))
        return {"ids": []}

    backend = ByFamily(
        {"keywords": lambda m: {"keywords": []}, "predict": predict, "filter": _keep_all}
    )
    asyncio.run(
        GuidedRoute(GuidedParams(k_turn=1)).search(
            llm_ctx(store, embedder, backend), NS, [QUESTION], 10
        )
    )
    (prompt,) = seen
    prius = next(
        line.strip().split(" ", 1)[0] for line in prompt.splitlines() if "from the dealer" in line
    )
    assert f"Facts:\n- 2023-05-08: Evan picked up a Prius ({prius})" in prompt
    assert "fact sheet" in backend.asked["predict"][0][0].content
    # No sheet lines: the summary alone, as before.
    seen.clear()
    backend = ByFamily(
        {"keywords": lambda m: {"keywords": []}, "predict": predict, "filter": _keep_all}
    )
    params = GuidedParams(k_turn=1, sheet_lines=0)
    asyncio.run(GuidedRoute(params).search(llm_ctx(store, embedder, backend), NS, [QUESTION], 10))
    assert "Facts:" not in seen[0]


def test_every_call_asks_with_the_models_budget(embedder) -> None:  # type: ignore[no-untyped-def]
    """Construction and retrieval ask with the budgets of the model: the bundled one's
    for the small profile, larger ones for a chat model (those that list what was shown
    add room for every item on top)."""
    from memstrata.designs.higmem.prompts import STAGES
    from memstrata.engine.contracts import Context
    from memstrata.llm import LLMClient
    from memstrata.llm.budgets import Budgets
    from memstrata.store import SQLiteStore

    rules = {
        "analysis": analysis_reply,
        "affiliation": one_event,
        "refresh": sheet,
        "keywords": lambda m: {"keywords": ["Evan", "car"]},
        "predict": lambda m: {"ids": []},
        "filter": lambda m: {"ids": []},
    }
    sent: dict[str, dict[str, int]] = {}
    for profile in ("small", "chat"):
        store = SQLiteStore(":memory:")
        eps = add_turns(store, TURNS, embedder)
        budgets = Budgets.of(profile)
        backend = ByFamily(rules)
        ctx = Context(store, embedder, LLMClient(backend, max_retries=0, budgets=budgets), "llm")
        assert not asyncio.run(HiGMemBuilder().update(ctx, NS, eps)).failed
        asyncio.run(GuidedRoute(GuidedParams(k_turn=1)).search(ctx, NS, [QUESTION], 10))
        sent[profile] = {family(r.messages): r.max_tokens for r in backend.requests}
        for name in ("analysis", "affiliation", "refresh", "keywords"):
            assert sent[profile][name] == budgets.tokens(STAGES[name]), (profile, name)
        for name in ("predict", "filter"):
            assert sent[profile][name] > budgets.tokens(STAGES[name]), (profile, name)
    assert sent["small"]["analysis"] == 300 and sent["chat"]["analysis"] == 1024
    assert all(sent["chat"][name] > sent["small"][name] for name in sent["small"])
