"""The ``llm`` tier with the scripted backend: appendix A extraction, both appendix B
replacement formats, the appendix C entity parser and the NotEnoughInfo answer, and
answers that cannot be read."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest
from pai_helpers import NS, add_episodes

from memstrata.designs.personalai.answer import PersonalAIAnswerer, QAParams
from memstrata.designs.personalai.builder import PersonalAIBuilder, graph_cache
from memstrata.designs.personalai.memorize import MemorizeParams
from memstrata.designs.personalai.prompts import (
    KeyEntities,
    QAAnswer,
    Replacements,
    Theses,
    Triplets,
    replace_theses,
    replace_triplets,
)
from memstrata.designs.personalai.replies import _all_too_long, parse
from memstrata.designs.personalai.route import PersonalAIParams, PersonalAIRoute
from memstrata.engine.contracts import NOT_IN_MEMORY, Context
from memstrata.llm import LLMClient
from memstrata.llm.scripted import ScriptedBackend
from memstrata.llm.types import LLMOutputError, Message
from memstrata.models import Hit

EP1 = "Maya works at Acme in Lisbon."
EP2 = "Maya now works at Globex."


def test_parsers_read_the_papers_line_formats() -> None:
    th = parse(
        "Albert Einstein was born in Germany, ['Albert Einstein', 'Germany']\n"
        "Einstein developed relativity, ['Albert Einstein', 'Theory of Relativity']",
        Theses,
    )
    assert [t.nodes for t in th.theses][1] == ["Albert Einstein", "Theory of Relativity"]
    tr = parse("Maya, works at, Acme; Acme, located in, Lisbon", Triplets)
    assert [(t.subject, t.relation, t.object) for t in tr.triplets][1] == (
        "Acme",
        "located in",
        "Lisbon",
    )
    table7 = parse('["broom is in inventory <- kitchen contains broom";]', Replacements)
    assert table7.replacements[0].outdated == "kitchen contains broom"
    assert table7.replacements[0].new == "broom is in inventory"
    table8 = parse("[[kitchen, contains, broom -> broom, is in, inventory],]", Replacements)
    assert table8.replacements[0].outdated == "kitchen, contains, broom"
    assert table8.replacements[0].new == "broom, is in, inventory"
    assert parse("[]", Replacements).replacements == []
    assert parse("device; battery life; Apple", KeyEntities).entities[2] == "Apple"
    qa = parse("[Chain of thoughts]: nothing fits. [Answer]: <NotEnoughtInfo>", QAAnswer)
    assert qa.abstained and qa.chain_of_thoughts == "nothing fits."
    assert parse('{"answer": "Lisbon"}', QAAnswer).answer == "Lisbon"
    # the final answer, not an "answer:" inside the reasoning
    reasoned = parse(
        "[Chain of thoughts]: The first answer: Porto, is from 2019. Later she moved.\n"
        "[Answer]: Lisbon",
        QAAnswer,
    )
    assert reasoned.answer == "Lisbon" and "Porto" in reasoned.chain_of_thoughts
    untagged = parse("Reasoning: my answer: maybe Porto?\nAnswer: Lisbon", QAAnswer)
    assert untagged.answer == "Lisbon"


@pytest.mark.parametrize(
    ("text", "model"),
    [
        ("Maya and Acme, I suppose", Triplets),
        ("just words", Replacements),
        ("", QAAnswer),
        ("[Chain of thoughts]: unsure. [Answer]:", QAAnswer),
    ],
)
def test_unreadable_answers_raise(text, model) -> None:
    with pytest.raises(LLMOutputError):
        parse(text, model)


def _responder(replace: str | dict, fmt: str):
    """Answers by prompt: theses, triplets, then the replacement prompts."""

    def answer(messages: list[Message]) -> str:
        system, user = messages[0].content, messages[-1].content
        second = EP2 in user
        if "[Extracted thesises]" in user:
            if fmt == "lines":
                return (
                    "Maya now works at Globex, ['Maya', 'Globex']"
                    if second
                    else "Maya works at Acme, ['Maya', 'Acme']"
                )
            thesis = "Maya now works at Globex" if second else "Maya works at Acme"
            nodes = ["Maya", "Globex" if second else "Acme"]
            return json.dumps({"theses": [{"thesis": thesis, "nodes": nodes}]})
        if "[Extracted Triplets]" in user:
            pairs = (
                [("Maya", "works at", "Globex")]
                if second
                else [
                    ("Maya", "works at", "Acme"),
                    ("Acme", "located in", "Lisbon"),
                ]
            )
            if fmt == "lines":
                return "; ".join(", ".join(p) for p in pairs)
            keys = ("subject", "relation", "object")
            return json.dumps({"triplets": [dict(zip(keys, p, strict=True)) for p in pairs]})
        if "existing thesises" in system:
            return replace["theses"] if isinstance(replace, dict) else replace
        if "existing triplets" in system:
            return replace["triplets"] if isinstance(replace, dict) else replace
        raise AssertionError(f"unexpected prompt: {system[:80]}")

    return answer


def _build(store, embedder, backend, output: str, texts: dict[str, str], **params):
    add_episodes(store, texts)
    ctx = Context(store, embedder, LLMClient(backend, max_retries=0), tier="llm")
    builder = PersonalAIBuilder(MemorizeParams(output=output, **params))  # type: ignore[arg-type]
    eps = store.get_episodes(NS, list(texts))
    for ep in eps:
        ep.occurred_at = datetime(2024, 1 + eps.index(ep), 1, tzinfo=UTC)
    result = asyncio.run(builder.update(ctx, NS, eps))
    return ctx, result


@pytest.mark.parametrize("fmt", ["json", "lines"])
def test_replacement_in_both_formats_keeps_history(store, embedder, fmt) -> None:
    if fmt == "json":
        replace = {
            "theses": json.dumps(
                {
                    "replacements": [
                        {"outdated": "Maya works at Acme", "new": "Maya now works at Globex"}
                    ]
                }
            ),
            "triplets": json.dumps(
                {
                    "replacements": [
                        {"outdated": "Maya, works at, Acme", "new": "Maya, works at, Globex"}
                    ]
                }
            ),
        }
    else:  # Table 7's "new <- old" and Table 8's "[[old -> new]]"
        replace = {
            "theses": '["Maya now works at Globex <- Maya works at Acme";]',
            "triplets": "[[Maya, works at, Acme -> Maya, works at, Globex],]",
        }
    backend = ScriptedBackend([_responder(replace, fmt)] * 6)
    ctx, result = _build(store, embedder, backend, fmt, {"e1": EP1, "e2": EP2})
    assert result.failed == {}
    graph = graph_cache(ctx).get(NS)
    old_t = next(t for t in graph.theses.values() if t.text == "Maya works at Acme")
    new_t = next(t for t in graph.theses.values() if t.text == "Maya now works at Globex")
    assert old_t.invalid_at == datetime(2024, 2, 1, tzinfo=UTC) and old_t.replaced_by == [new_t.id]
    old_f = next(f for f in graph.triplets.values() if f.fact == "Maya works at Acme")
    new_f = next(f for f in graph.triplets.values() if f.fact == "Maya works at Globex")
    assert old_f.invalid_at is not None and old_f.replaced_by == [new_f.id]
    other = next(f for f in graph.triplets.values() if f.fact == "Acme located in Lisbon")
    assert other.invalid_at is None  # not named in the replacements: kept valid
    stored = {r.id: r for r in store.get_records(NS, "fact", builder=None)}
    assert stored[old_f.id].invalid_at is not None  # kept in the store, not deleted
    assert {s.episode for s in graph.objects[graph.by_name["maya"]].sources} == {"e1", "e2"}
    prompts = [r.messages[-1].content for r in backend.requests]
    assert any("Maya, works at, Acme" in p and "Existing triplets" in p for p in prompts)


def test_an_unreadable_answer_fails_the_episode_and_changes_nothing(store, embedder) -> None:
    good = _responder("[]", "json")

    def answer(messages: list[Message]) -> str:
        if "Ghana" in messages[-1].content:
            return "Sorry, I cannot do that."  # no JSON at all
        return good(messages)

    backend = ScriptedBackend([answer] * 6)
    ctx, result = _build(
        store, embedder, backend, "json", {"bad": "Ghana is in Africa.", "e1": EP1}
    )
    assert list(result.failed) == ["bad"] and "LLMOutputError" in result.failed["bad"]
    graph = graph_cache(ctx).get(NS)
    assert "ghana" not in graph.by_name and "maya" in graph.by_name
    assert all(s.episode == "e1" for o in graph.objects.values() for s in o.sources)
    assert store.get_episodes(NS, ["bad"])[0].text == "Ghana is in Africa."
    assert store.built_keys(NS, "personalai") == {store.get_episodes(NS, ["e1"])[0].key}


def _hits() -> list[Hit]:
    return [
        Hit(kind="fact", id="f", text="Maya works at Acme", score=1.0, sources=["e1"]),
        Hit(kind="episode", id="e1", text=EP1, score=1.0, sources=["e1"]),
    ]


@pytest.mark.parametrize("fmt", ["json", "lines"])
def test_qa_generator_answers_or_says_not_enough_info(store, embedder, fmt) -> None:
    if fmt == "json":
        replies = [
            {"chain_of_thoughts": "Acme is named.", "answer": "Acme"},
            {"chain_of_thoughts": "No pets are mentioned.", "answer": "<NotEnoughtInfo>"},
        ]
    else:
        replies = [
            "[Chain of thoughts]: Acme is named. [Answer]: Acme",
            "[Chain of thoughts]: No pets. [Answer]: < NotEnoughtInfo >",
        ]
    backend = ScriptedBackend(replies)
    ctx = Context(store, embedder, LLMClient(backend), tier="llm")
    qa = PersonalAIAnswerer(QAParams(output=fmt))  # type: ignore[arg-type]
    yes = asyncio.run(qa.answer(ctx, NS, "Where does Maya work?", _hits()))
    assert yes.text == "Acme" and not yes.abstained and yes.sources == ["e1"]
    assert yes.usage["calls"] == 1
    shown = backend.requests[0].messages[-1].content
    assert shown.index("Maya works at Acme") < shown.index(EP1)  # triplets first
    no = asyncio.run(qa.answer(ctx, NS, "What pet does Maya have?", _hits()))
    assert no.abstained and no.text == NOT_IN_MEMORY and no.sources == []


def test_a_qa_reply_in_words_is_read_and_an_unusable_one_falls_back_to_the_contexts(
    store, embedder
) -> None:
    """Asked for JSON, a model may answer in words: its final answer line is the answer.
    A reply with no answer at all (JSON of other fields, twice) loses nothing retrieved:
    the answer is the contexts' extract, marked and counted."""
    add_episodes(store, {"e1": EP1})
    words = "Acme is named in the first context.\nFinal answer: Acme"
    backend = ScriptedBackend([words, {"reply": "Acme"}, {"reply": "Acme"}])
    ctx = Context(store, embedder, LLMClient(backend), tier="llm")
    qa = PersonalAIAnswerer(QAParams(output="json"))
    read = asyncio.run(qa.answer(ctx, NS, "Where does Maya work?", _hits()))
    assert read.text == "Acme" and not read.extractive and read.usage["calls"] == 1
    assert "unusable_replies" not in read.usage
    fell = asyncio.run(qa.answer(ctx, NS, "Where does Maya work?", _hits()))
    assert len(backend.requests) == 3  # the unusable reply was asked again once
    assert fell.extractive and not fell.abstained and "Acme" in fell.text
    assert fell.sources == ["e1"]
    assert fell.usage["unusable_replies"] == 1 and fell.usage["calls"] == 1


def test_llm_entity_parser_and_its_fallback(store, embedder) -> None:
    backend = ScriptedBackend([{"entities": ["Maya", "employer"]}, "not json", "still not"])
    llm = LLMClient(backend, max_retries=1)
    route = PersonalAIRoute(PersonalAIParams())
    assert asyncio.run(route.entities("Who employs Maya?", llm)) == ["Maya", "employer"]
    # the model fails twice: the heuristic parser stands in
    assert asyncio.run(route.entities("Who employs Maya?", llm)) == ["Maya"]


def test_entities_the_question_does_not_name_are_not_start_nodes(store, embedder) -> None:
    """Table 9 extracts entities from the text: a model copying the prompt's examples
    names nothing the question names, and the heuristic parser stands in; of a mixed
    list the entities the question names are kept (by stem: "devices" names "device")."""
    backend = ScriptedBackend(
        [
            {"entities": ["Kayla", "opinion", "Xiaomi 10Pro"]},
            {"entities": ["Maya", "Xiaomi 10Pro", "device"]},
        ]
    )
    route = PersonalAIRoute(PersonalAIParams())
    llm = LLMClient(backend)
    assert asyncio.run(route.entities("Which devices does Maya own?", llm)) == ["Maya"]
    assert asyncio.run(route.entities("Which devices does Maya own?", llm)) == ["Maya", "device"]


def test_an_empty_list_with_a_remark_is_an_empty_answer() -> None:
    for text in ("[]. Nothing to replace here.", "[] - no outdated triplets", "  []"):
        assert parse(text, Replacements).replacements == []
    assert parse("[]\nNo theses found.", Theses).theses == []


def test_a_failed_replacement_keeps_the_extraction_and_is_retried(store, embedder) -> None:
    # The replacement reply cannot be read at all: the episode's triplets and theses are
    # written anyway, the episode is reported failed, and running it again adds nothing
    # twice and applies the replacement.
    backend = ScriptedBackend([_responder("I would rather not say.", "lines")] * 8)
    ctx, first = _build(store, embedder, backend, "lines", {"e1": EP1})
    assert first.failed == {}
    second_ep = {"e2": EP2}
    add_episodes(store, second_ep)
    (ep2,) = store.get_episodes(NS, ["e2"])
    ep2.occurred_at = datetime(2024, 2, 1, tzinfo=UTC)
    builder = PersonalAIBuilder(MemorizeParams(output="lines"))
    result = asyncio.run(builder.update(ctx, NS, [ep2]))
    assert list(result.failed) == ["e2"]
    assert "extraction kept" in result.failed["e2"] and "replace_" in result.failed["e2"]
    graph = graph_cache(ctx).get(NS)
    globex = [f for f in graph.triplets.values() if f.fact == "Maya works at Globex"]
    assert len(globex) == 1 and globex[0].sources[0].episode == "e2"
    counts = {k: len(store.get_records(NS, k, builder=None)) for k in ("entity", "fact")}

    # the retry: this time the model answers the replacement prompt
    fixed = _responder(
        {"theses": "[]", "triplets": "[Maya, works at, Acme -> Maya, works at, Globex]"}, "lines"
    )
    ctx2 = Context(store, embedder, LLMClient(ScriptedBackend([fixed] * 8), max_retries=0), "llm")
    graph_cache(ctx2).forget(NS)
    again = asyncio.run(builder.update(ctx2, NS, [ep2]))
    assert again.failed == {}
    assert {k: len(store.get_records(NS, k, builder=None)) for k in ("entity", "fact")} == counts
    graph = graph_cache(ctx2).get(NS)
    old = next(f for f in graph.triplets.values() if f.fact == "Maya works at Acme")
    (new,) = [f for f in graph.triplets.values() if f.fact == "Maya works at Globex"]
    assert old.invalid_at is not None and old.replaced_by == [new.id]
    assert len(new.sources) == 1  # the same span, not repeated


@pytest.mark.parametrize("output", ["json", "lines"])
@pytest.mark.parametrize("table", [replace_theses, replace_triplets])
def test_replacement_prompts_carry_every_kind_of_the_papers_examples(table, output) -> None:
    """Tables 7 and 8: the locker example, nothing to replace, several replaced by one,
    two "do not replace" cases, the repeated warning; each example's reply written in the
    format the prompt asks for."""
    (system, user), model = table(["a"], ["b"], output)
    text = system.content
    assert model is Replacements
    for part in (
        "locker",
        "Room T",
        "Nothing to replace here.",
        "Several can be replaced by one",
        "apple has been grilled" if table is replace_theses else "apple, has been, grilled",
        "art class",
        "When unsure, keep the existing",
        "Once more: do not replace",
        "needs its replacement among the new",
        "no descriptions",
    ):
        assert part in text, part
    assert ("sneakers" in text) == (table is replace_theses)  # Table 7's own rule
    if output == "json":
        assert text.count('{"replacements": []}') == 3 and '"outdated": "' in text
    elif table is replace_theses:
        assert text.count("Replacing: []") == 3
        assert '"broom is in inventory <- kitchen contains broom"' in text
    else:
        assert "[[kitchen, contains, broom -> broom, is in, inventory], " in text
    assert user.content.endswith("Replacing:")


def test_replies_name_items_loosely_and_nothing_said_in_words_is_an_answer(store, embedder) -> None:
    """Case, punctuation, quotes and a trailing period do not hide an item; "No
    replacements are needed." (not JSON) is an empty answer, not a failed episode."""
    replace = {
        "theses": "No replacements are needed.",
        "triplets": json.dumps(
            {
                "replacements": [
                    {"outdated": "maya, WORKS AT, acme.", "new": '"Maya works at Globex"'}
                ]
            }
        ),
    }
    backend = ScriptedBackend([_responder(replace, "json")] * 6)
    ctx, result = _build(store, embedder, backend, "json", {"e1": EP1, "e2": EP2})
    assert result.failed == {}
    graph = graph_cache(ctx).get(NS)
    old_f = next(f for f in graph.triplets.values() if f.fact == "Maya works at Acme")
    new_f = next(f for f in graph.triplets.values() if f.fact == "Maya works at Globex")
    assert old_f.replaced_by == [new_f.id]
    assert all(t.invalid_at is None for t in graph.theses.values())  # "no replacements"
    for said in ("Nothing to replace here.", "none", "There are no outdated triplets."):
        assert parse(said, Replacements).replacements == []
    with pytest.raises(LLMOutputError):
        parse("Maya moved, I think", Replacements)


def test_the_existing_items_shown_are_the_closest_to_the_new_ones(store, embedder) -> None:
    """With room for one existing triplet, the prompt shows the one that shares the most
    words with a new triplet, not the first met."""
    first = "Maya likes green tea. Maya works at Acme."

    def answer(messages: list[Message]) -> str:
        user = messages[-1].content
        if "[Extracted thesises]" in user:
            return json.dumps({"theses": []})
        if "[Extracted Triplets]" in user:
            rows = (
                [("Maya", "works at", "Globex")]
                if EP2 in user
                else [("Maya", "likes", "green tea"), ("Maya", "works at", "Acme")]
            )
            keys = ("subject", "relation", "object")
            return json.dumps({"triplets": [dict(zip(keys, r, strict=True)) for r in rows]})
        return json.dumps({"replacements": []})

    backend = ScriptedBackend([answer] * 6)
    _, result = _build(store, embedder, backend, "json", {"e1": first, "e2": EP2}, max_existing=1)
    assert result.failed == {}
    shown = [
        r.messages[-1].content
        for r in backend.requests
        if "Existing triplets" in r.messages[-1].content
    ]
    assert len(shown) == 1
    assert "Maya, works at, Acme" in shown[0] and "green tea" not in shown[0]


@pytest.mark.parametrize("output", ["json", "lines"])
def test_extraction_prompts_carry_every_example_of_tables_5_and_6(output) -> None:
    """Table 5: Einstein, the north exit (one consistent thesis), John's hypothesis, the
    knight, several thesises about one node; Table 6: the same kinds with triplets, the
    Wikidata note, "do not miss this type of connections"."""
    from memstrata.designs.personalai.prompts import extract_theses, extract_triplets

    (theses, _), _ = extract_theses("x", output)
    (triplets, _), _ = extract_triplets("x", output)
    wanted = {
        theses.content: [
            "Albert Einstein",
            "North exit from kitchen",
            "potentially will be winner",
            "knight needs to kill dragon",
            "kitchen contains apple",
        ],
        triplets.content: [
            "Wikidata",
            "John, could be, winner",
            "John, will be, winner",
            "knight, needs to kill, dragon",
            "kitchen, contains, table",
            "apple, is on, table",
            "Do not miss this type of connections",
            "at most 7 words",
        ],
    }
    for prompt, parts in wanted.items():
        for part in parts:
            assert part in prompt, part


@pytest.mark.parametrize("output", ["json", "lines"])
def test_question_prompts_carry_every_example_of_tables_9_and_10(output) -> None:
    """Table 9's four key-entity examples and Table 10's three answers (one found, one
    with too little in the contexts, one with none), each written in the format the
    prompt asks for: the parser reads every demonstration back."""
    from memstrata.designs.personalai.prompts import (
        KEY_ENTITY_EXAMPLES,
        NOT_ENOUGH,
        QA_EXAMPLES,
        KeyEntities,
        QAAnswer,
        key_entities,
        qa,
    )

    (system, _), _ = key_entities("Which phone did Ann buy?", output)
    shown = system.content.split("[Key entities]: ")[1:]
    assert len(shown) == len(KEY_ENTITY_EXAMPLES) == 4
    for text, (example, entities) in zip(shown, KEY_ENTITY_EXAMPLES, strict=True):
        reply = text.split(" ####")[0].split(" Return only")[0].split(" Answer with")[0]
        assert parse(reply, KeyEntities).entities == entities, example
    (system, user), _ = qa("Where does Leo teach?", ["Leo, teaches in, Toronto"], output)
    mark = '{"chain_of_thoughts"' if output == "json" else "[Chain of thoughts]: "
    replies = [line for line in system.content.splitlines() if line.startswith(mark)]
    assert [parse(r, QAAnswer).answer for r in replies] == [a for *_, a in QA_EXAMPLES]
    assert [a for *_, a in QA_EXAMPLES] == ["Anthony", NOT_ENOUGH, NOT_ENOUGH]
    assert "<Empty>" in system.content and "k30s" in system.content
    assert "Toronto" in user.content and "Toronto" not in system.content


@pytest.mark.parametrize("fmt", ["json", "lines"])
def test_a_triplet_over_the_prompts_seven_words_is_dropped_alone(store, embedder, fmt) -> None:
    """Table 6: "A triplet is at most 7 words." From a model that writes a longer one,
    that triplet is left out (on the JSON path counted as ``triplet_too_long``), and
    the reply's other triplets are kept."""
    from memstrata.llm.salvage import Salvage
    from memstrata.llm.schema import parse_structured

    long = ("Maya", "has been working very hard for years at", "the Acme company")
    short = ("Maya", "works at", "Acme")
    keys = ("subject", "relation", "object")
    as_json = json.dumps({"triplets": [dict(zip(keys, t, strict=True)) for t in (long, short)]})
    as_lines = "; ".join(", ".join(t) for t in (long, short))
    repairs = Salvage()
    got = parse_structured(as_json, Triplets, repairs)
    assert [(t.subject, t.relation, t.object) for t in got.triplets] == [short]
    assert repairs.reasons == {"triplet_too_long": 1}
    for text in (as_json, as_lines):  # the lines parser reads either format
        assert [t.relation for t in parse(text, Triplets).triplets] == ["works at"]

    def answer(messages: list[Message]) -> str:
        user = messages[-1].content
        if "[Extracted thesises]" in user:
            return "[]" if fmt == "lines" else json.dumps({"theses": []})
        if "[Extracted Triplets]" in user:
            return as_lines if fmt == "lines" else as_json
        return "[]" if fmt == "lines" else json.dumps({"replacements": []})

    ctx, result = _build(store, embedder, ScriptedBackend([answer] * 4), fmt, {"e1": EP1})
    assert not result.failed
    graph = graph_cache(ctx).get(NS)
    assert [f.relation for f in graph.triplets.values()] == ["works at"]


def test_a_reply_of_only_too_long_triplets_is_none_and_keeps_the_episode(store, embedder) -> None:
    """The 135M model writes whole sentences as triplets. Every triplet over the bound
    leaves no triplet the paper allows: the reply is an empty answer with its triplets
    counted as dropped, not a failed call that would fail the episode and its theses."""
    from memstrata.llm.types import MemoryUsageSink

    sentence = {"subject": EP1, "relation": "triplets", "object": "Maya works at Acme"}
    cut = {"subject": "Maya"}  # the last item, cut off by the token limit
    thesis = {"theses": [{"thesis": "Maya works at Acme", "nodes": ["Maya", "Acme"]}]}

    def answer(messages: list[Message]) -> str:
        user = messages[-1].content
        if "[Extracted thesises]" in user:
            return json.dumps(thesis)
        if "[Extracted Triplets]" in user:
            return json.dumps({"triplets": [sentence, cut]})
        return json.dumps({"replacements": []})

    add_episodes(store, {"e1": EP1})
    sink = MemoryUsageSink()
    llm = LLMClient(ScriptedBackend([answer] * 3), max_retries=0, usage=sink)
    ctx = Context(store, embedder, llm, tier="llm")
    builder = PersonalAIBuilder(MemorizeParams(output="json"))
    result = asyncio.run(builder.update(ctx, NS, store.get_episodes(NS, ["e1"])))
    assert not result.failed
    graph = graph_cache(ctx).get(NS)
    assert not graph.triplets
    assert [t.text for t in graph.theses.values()] == ["Maya works at Acme"]
    (call,) = [r for r in sink.records if r.stage == "personalai.triplets"]
    assert call.ok and call.attempts == 1
    assert call.dropped == {"triplet_too_long": 1, "missing_field": 1}
    half = {"triplets": [{"subject": "Maya", "relation": "works"}]}  # not over, broken
    with pytest.raises(LLMOutputError, match="every item"):
        asyncio.run(
            LLMClient(ScriptedBackend([half]), max_retries=0).structured(
                [Message(role="user", content="x")],
                Triplets,
                stage="t",
                fallback=lambda text, repairs: _all_too_long(text, repairs),
            )
        )


@pytest.mark.parametrize(("profile", "memorize", "qa"), [("small", 768, 400), ("chat", 2048, 2048)])
def test_each_call_asks_with_the_models_budget(store, embedder, profile, memorize, qa) -> None:
    """Extraction, replacement and QA ask with the model's budgets (a chat model's are
    the paper's num_predict, 2,048); a budget set in the recipe wins."""
    from memstrata.llm.budgets import Budgets

    backend = ScriptedBackend([_responder("[]", "json")] * 6 + [{"answer": "Acme"}] * 2)
    llm = LLMClient(backend, max_retries=0, budgets=Budgets.of(profile))
    add_episodes(store, {"e1": EP1, "e2": EP2})
    ctx = Context(store, embedder, llm, tier="llm")
    eps = store.get_episodes(NS, ["e1", "e2"])
    assert asyncio.run(PersonalAIBuilder(MemorizeParams()).update(ctx, NS, eps)).failed == {}
    built = [r.max_tokens for r in backend.requests]
    assert len(built) == 6 and set(built) == {memorize}  # theses, triplets, replacements
    asyncio.run(PersonalAIAnswerer().answer(ctx, NS, "Where does Maya work?", _hits()))
    asked = PersonalAIAnswerer(QAParams(max_tokens=100))
    asyncio.run(asked.answer(ctx, NS, "Where does Maya work?", _hits()))
    assert [r.max_tokens for r in backend.requests[6:]] == [qa, 100]
