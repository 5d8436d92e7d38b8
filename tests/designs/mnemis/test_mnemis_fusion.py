"""Mnemis retrieval: discriminative Global Selection (hubs), the union and its reranking
in both tiers, the System-2 ablation, filters, validity windows and categories as nodes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata.config import Config
from memstrata.designs.mnemis.global_selection import SelectionParams, select_heuristic
from memstrata.designs.mnemis.graph import SPEAKER_CATEGORY, Graph
from memstrata.designs.mnemis.hierarchy import Hierarchy
from memstrata.designs.mnemis.records import Category
from memstrata.designs.mnemis.route import EpisodeUnion, MnemisRoute
from memstrata.llm import LLMClient
from memstrata.llm.scripted import ScriptedBackend
from memstrata.memory import Memory
from memstrata.models import Entity, Span
from memstrata.store import SQLiteStore, Store
from memstrata.store.base import SearchFilters


@contextmanager
def recorded_unions() -> Iterator[list[EpisodeUnion]]:
    """The episode unions the Mnemis route ranks while the block runs, in order."""
    seen: list[EpisodeUnion] = []
    rankings = EpisodeUnion.rankings
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(EpisodeUnion, "rankings", lambda u: seen.append(u) or rankings(u))
        yield seen


def _graph(embedder) -> tuple[Graph, dict[str, str]]:
    """Ten episodes: Maya speaks in eight (a hub); pottery in e1 and e2, only e2 is Maya's;
    painting and knitting once each."""
    graph = Graph(SQLiteStore(":memory:"), embedder, "t")
    cited = {
        "Maya": [f"e{i}" for i in range(2, 10)],
        "pottery": ["e1", "e2"],
        "painting": ["e3"],
        "knitting": ["e10"],
    }
    ids = {}
    for name, eps in cited.items():
        kind = "speaker" if name == "Maya" else "activity"
        ent = Entity(
            namespace="t",
            name=name,
            entity_type=kind,
            sources=[Span(episode=e, start=0, end=1) for e in eps],
        )
        ids[name] = graph.add_entity(ent).id
    crafts = Category(
        namespace="t",
        name="Crafts",
        layer=1,
        child_ids=[ids["pottery"], ids["painting"], ids["knitting"]],
    )
    speaker = Category(namespace="t", name=SPEAKER_CATEGORY, layer=1, child_ids=[ids["Maya"]])
    for c in (crafts, speaker):
        graph.categories[c.id] = c
    ids["Crafts"] = crafts.id
    return graph, ids


def test_hubs_are_never_selected_and_a_named_hub_narrows_the_episodes(embedder) -> None:
    graph, ids = _graph(embedder)
    params = SelectionParams(floor=-1.0, entity_floor=0.99, hub_share=0.5, hub_least=2)
    graph.set_hub_share(params.hub_share, params.hub_least)
    assert graph.hubs() == {ids["Maya"]}  # 8 of 10 episodes; pottery cites 2
    qvec = embedder.embed(["What pottery did Maya make?"])[0]
    sel = select_heuristic(graph, Hierarchy(graph), qvec, params, {"pottery", "maya", "make"})
    assert sel.entities == [ids["pottery"]]  # named by the query; Maya, a hub, is not
    assert ids["Maya"] not in sel.linked_entities
    assert sel.hubs == [ids["Maya"]]
    assert sel.episodes == ["e2"]  # pottery's episodes where Maya is cited: e1 is not
    assert sel.support == {"e2": 1}


def test_heuristic_all_children_takes_the_whole_subtree_but_no_hub(embedder) -> None:
    graph, ids = _graph(embedder)
    qvec = embedder.embed(["crafts"])[0]
    params = SelectionParams(
        floor=-1.0, all_children=-1.0, entity_floor=0.99, hub_share=0.5, hub_least=2
    )
    sel = select_heuristic(graph, Hierarchy(graph), qvec, params, {"crafts"})
    assert set(sel.entities) == {ids["pottery"], ids["painting"], ids["knitting"]}
    assert ids["Crafts"] in sel.categories and sel.hubs == []
    assert sel.support == {"e1": 1, "e2": 1, "e3": 1, "e10": 1}


@pytest.fixture
def built(tmp_path: Path, embedder, sample) -> Path:
    with Memory.open(tmp_path / "m.db", embedder=embedder) as m:
        m.add_many(sample)
        m.build(recipe="mnemis")
    return tmp_path / "m.db"


def test_system2_enters_the_union_and_the_ablation_turns_it_off(built: Path, embedder) -> None:
    query = "What hobbies and activities does Tomas have?"
    with Memory.open(built, embedder=embedder) as m:
        both = m.search(query, recipe="mnemis", k=25, max_tokens=None)  # 5 per share
        s1 = m.search(query, recipe="mnemis-no-s2", k=25, max_tokens=None)
        names = {r["name"] for r in m.recipes()}
    assert "mnemis-no-s2" in names
    assert all("system2" not in h.routes for h in s1.hits)
    s2_hits = [h for h in both.hits if "system2" in h.routes]
    assert s2_hits, "System-2 contributed nothing to the union"
    assert any(h.kind == "episode" for h in s2_hits)
    # Only System-2 walks categories; one comes back within the entity budget, rendered.
    cats = [h for h in both.hits if h.metadata.get("category")]
    assert cats and all(h.kind == "entity" and h.text.startswith("[category") for h in cats)
    assert len([h for h in both.hits if h.kind == "entity"]) <= 10
    assert cats[0].text.split("] ", 1)[1].split(":")[0] in both.context


def test_filters_hold_for_facts_entities_and_their_episodes(built: Path, embedder) -> None:
    store = SQLiteStore(built)
    tomas = {ep.id for ep in store.iter_episodes("default") if ep.speaker == "Tomas"}
    store.close()
    with Memory.open(built, embedder=embedder) as m:
        r = m.search(
            "Pepper the greyhound and Lisbon",
            recipe="mnemis",
            k=25,  # 5 per share: 5 episodes, 10 facts, 10 entities
            max_tokens=None,
            filters=SearchFilters(speakers=["Tomas"]),
        )
    kinds = {h.kind for h in r.hits}
    assert {"episode", "fact", "entity"} <= kinds
    for h in r.hits:
        if h.kind == "episode":
            assert h.id in tomas
        else:  # a record rests on at least one admitted episode
            assert set(h.sources) & tomas or h.metadata.get("category"), h


def test_an_invalidated_fact_stays_searchable_with_its_validity_window(
    built: Path, embedder
) -> None:
    store = SQLiteStore(built)
    graph = Graph.load(store, embedder, "default")
    fact = next(f for f in graph.facts.values() if "Pepper" in f.fact)
    fact.invalid_at = datetime(2024, 5, 1, tzinfo=UTC)
    graph.touch(fact)
    graph.flush()
    store.close()
    with Memory.open(built, embedder=embedder) as m:
        r = m.search(fact.fact, recipe="mnemis", k=15, max_tokens=None)
    hit = next(h for h in r.hits if h.id == fact.id)
    assert hit.metadata["invalid_at"].startswith("2024-05-01")
    assert hit.text.endswith("to 2024-05-01)") and "(valid 2024-" in hit.text
    assert "to 2024-05-01" in r.context


def test_llm_tier_reranks_the_union_and_can_change_what_is_returned(
    built: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole union of each kind is shown to the reranker, in windows; its order
    decides what is returned: a reranker preferring the texts last in the alphabet gets
    exactly those, wherever they sat in the union."""
    from memstrata.designs.mnemis.rerank import RERANK_WINDOW

    windows: dict[str, list[list[str]]] = {}

    def answer(messages) -> str:
        system, user = messages[0].content, messages[-1].content
        if "hierarchical knowledge graph" in system:  # Global Selection: take every node
            uuids = re.findall(r'uuid: "([0-9a-f]+)"', user)
            return json.dumps({"nodes": [{"name": "x", "uuid": u} for u in uuids[:3]]})
        kind = re.search(r"Order the (\w+) candidates", system).group(1)  # type: ignore[union-attr]
        listed = re.findall(r"^(\d+): (.*)$", user, flags=re.M)
        windows.setdefault(kind, []).append([text for _, text in listed])
        order = sorted(range(len(listed)), key=lambda i: listed[i][1], reverse=True)
        return json.dumps({"order": order})

    def scripted(config: Config, store: Store, namespace: str | None = None) -> LLMClient:
        return LLMClient(ScriptedBackend([answer] * 200), usage=store, namespace=namespace)

    monkeypatch.setattr("memstrata.memory.make_llm", scripted)
    with Memory.open(built, embedder=embedder, llm={"kind": "gguf"}) as m:
        r = m.search("Where is Maya flying for the conference?", recipe="mnemis", k=15)
    eps = [h for h in r.hits if h.kind == "episode"]
    shown = {t[:40] for w in windows["episode"] for t in w}
    assert len(shown) > 2 * 3 and len(eps) == 3  # far more than a window of 2k, cut to k
    assert len(windows["episode"]) > 1 and all(len(w) <= RERANK_WINDOW for w in windows["episode"])
    assert [h.text[:40] for h in eps] == sorted(shown, reverse=True)[:3]
    facts = [h for h in r.hits if h.kind == "fact"]
    fact_shown = {t[:40] for w in windows["fact"] for t in w}
    assert len(fact_shown) > len(facts) == 6  # the whole union shown, 2k kept
    assert [h.text[:40] for h in facts] == sorted(fact_shown, reverse=True)[:6]


def test_categories_carry_member_derived_summaries_and_tags(built: Path, embedder) -> None:
    store = SQLiteStore(built)
    graph = Graph.load(store, embedder, "default")
    store.close()
    multi = [c for c in graph.categories.values() if len(c.child_ids) > 1]
    assert multi
    for cat in multi:
        if cat.name == SPEAKER_CATEGORY:
            continue
        members = [graph.name_of(k) for k in cat.child_ids]
        assert cat.summary.startswith(f"{cat.name}: ") and members[0] in cat.summary
        assert 1 <= len(cat.tags) <= 5


def test_retrieval_tier_heuristic_keeps_searches_free_of_llm_calls(
    built: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one reply, the answer's: a search that called the LLM would exhaust the script
    backend = ScriptedBackend([json.dumps({"answer": "Lisbon.", "sources": []})])

    def scripted(config: Config, store: Store, namespace: str | None = None) -> LLMClient:
        return LLMClient(backend, usage=store, namespace=namespace)

    monkeypatch.setattr("memstrata.memory.make_llm", scripted)
    question = "Where is Maya flying for the conference?"
    with Memory.open(
        built, embedder=embedder, llm={"kind": "gguf"}, **{"retrieval.tier": "heuristic"}
    ) as m:
        r = m.search(question, recipe="mnemis", k=15)
        assert r.hits and not backend.requests  # no Global Selection, no reranking
        a = m.ask(question, recipe="mnemis")
    assert a.text == "Lisbon." and len(backend.requests) == 1  # the answerer still asks
    with Memory.open(built, embedder=embedder, **{"retrieval.tier": "heuristic"}) as m:
        plain = m.search(question, recipe="mnemis", k=15)
    assert [h.id for h in r.hits] == [h.id for h in plain.hits]


def _recipes(**recipes: str) -> str:
    """A config TOML of ``mnemis`` recipes, each with the given route parameters."""
    return "".join(
        f"""
[recipes.{name}]
builders = [{{ name = "mnemis" }}]
routes = [{{ name = "mnemis", params = {{ {params} }} }}]

[recipes.{name}.fusion]
kind_order = ["episode", "fact", "entity"]
budgets = {{ episode = 1, fact = 2, entity = 2 }}
"""
        for name, params in recipes.items()
    )


# the in-context ranking on and off, the in-session ranking off in both
NO_CONTEXT = _recipes(
    context_only="session_weight = 0.0",
    neither="session_weight = 0.0, context_weight = 0.0",
)


CHAT = [
    ("Lena", "Did you enjoy the hiking trip to the Alps with your brother?", "s1"),
    ("Omar", "Yes, loved it! Best weekend of the year, honestly.", "s1"),
    ("Lena", "My sister started a new job at the bakery downtown.", "s1"),
    ("Omar", "I finally fixed the leaking kitchen tap on Sunday.", "s2"),
    ("Lena", "We are painting the living room a pale green.", "s2"),
    ("Omar", "The quarterly tax forms are due on Friday.", "s2"),
    ("Lena", "Omar, your brother told me about the Alps photos.", "s3"),
    ("Omar", "The neighbours adopted two kittens last month.", "s3"),
    ("Lena", "I read a novel about a lighthouse keeper.", "s3"),
    ("Omar", "The football match was cancelled because of rain.", "s3"),
]
QUERY = "How did Omar like the hiking trip to the Alps?"


def _reply_in_context(tmp_path: Path, embedder, reply: str) -> tuple[int, int, EpisodeUnion]:
    """The reply turn's rank with and without the in-context ranking, in the chat above,
    and the union fused with it."""
    cfg_path = tmp_path / "c.toml"
    # the question read in Omar's voice ("How did I like ...") finds his reply in
    # System-1 already, and so do its being the answer to Lena's question and its being
    # Omar's turn next to the best one; and Lena's question gives way to statements by
    # itself; all off, so that what moves it is the context
    off = "voice_weight = 0.0\nreply_weight = 0.0\nthread_weight = 0.0\nquestion_penalty = 0.0\n"
    cfg_path.write_text(NO_CONTEXT + "\n[retrieval]\n" + off)
    chat = [(CHAT[1][0], reply, CHAT[1][2]) if i == 1 else t for i, t in enumerate(CHAT)]
    with Memory.open(tmp_path / "m.db", config=Config.load(cfg_path), embedder=embedder) as m:
        for i, (speaker, text, session) in enumerate(chat):
            m.add(text, id=f"t{i}", speaker=speaker, session=session)
        m.build(recipe="mnemis")

        def rank(recipe: str) -> int:
            r = m.search(QUERY, recipe=recipe, k=50, max_tokens=None)  # 10 per share
            return [h.id for h in r.hits if h.kind == "episode"].index("t1")

        with recorded_unions() as seen:
            with_context = rank("context_only")
        (union,) = seen
        return with_context, rank("neither"), union


def _route(m: Memory, recipe: str) -> MnemisRoute:
    return next(r for r in m.engine.routes(recipe) if isinstance(r, MnemisRoute))


def test_a_short_reply_is_read_with_the_question_before_it(tmp_path: Path, embedder) -> None:
    """ "Yes, loved it!" shares no word with the question asked later; the turn before it
    does. Read in context, the reply rises, right behind that question."""
    rank, rank0, union = _reply_in_context(tmp_path, embedder, CHAT[1][1])
    assert rank < rank0
    ctx = union.context
    # the reply ranks with the question it answers, which System-1 ranks above it
    assert abs(ctx.index("t1") - ctx.index("t0")) == 1
    assert union.system1.index("t1") > union.system1.index("t0") + 1
    # t6 ("... the Alps photos") follows t5 in the store but opens another session, so t5
    # borrows nothing from it, while t7 after it in the same session does
    assert abs(ctx.index("t7") - ctx.index("t6")) == 1
    assert ctx.index("t5") > max(ctx.index("t6"), ctx.index("t7"))


def test_a_turn_longer_than_the_embedder_reads_is_not_ranked_in_context(
    tmp_path: Path, embedder
) -> None:
    """Its vector covers its opening only; System-1 alone ranks it, whatever the context."""
    filler = " We also sorted the garage, repainted the fence and mowed the lawn."
    long_reply = CHAT[1][1] + filler * 16
    assert len(long_reply) > 1000
    _, _, union = _reply_in_context(tmp_path, embedder, long_reply)
    assert "t1" in union.system1 and "t1" not in union.context
    assert "t0" in union.context and "t2" in union.context


SESSIONS = [
    ("Omar", "I rented a boat for our sailing week in Crete.", "s1"),
    ("Lena", "How many people can sleep on board?", "s1"),
    ("Omar", "Four, if two of us take the deck.", "s1"),
    ("Omar", "It is a small red catamaran and it leaks a little.", "s1"),
    ("Lena", "Bring a bucket along then, just in case!", "s1"),
    ("Lena", "My sister opened a bakery downtown.", "s2"),
    ("Omar", "It is a small red van and it rattles a little.", "s2"),
    ("Lena", "We painted the kitchen pale green.", "s2"),
    ("Omar", "The football match was cancelled because of rain.", "s3"),
    ("Lena", "I read a novel about a lighthouse keeper.", "s3"),
]
SESSION_QUERY = "Which boat was rented for the week in Crete?"
IN_SESSION = _recipes(
    with_session="",
    without_session="session_weight = 0.0",
    window2="session_window = 2",
)


def test_a_turn_is_read_in_its_session(tmp_path: Path, embedder) -> None:
    """ "It is a small red catamaran" shares no word with the question; three turns before
    it, in its session, the boat and Crete are named. Read in their session, the turns
    around the boat's rise above an equally worded turn of another session, which borrows
    nothing."""
    cfg_path = tmp_path / "c.toml"
    cfg_path.write_text(IN_SESSION)
    with Memory.open(tmp_path / "m.db", config=Config.load(cfg_path), embedder=embedder) as m:
        for i, (speaker, text, session) in enumerate(SESSIONS):
            m.add(text, id=f"t{i}", speaker=speaker, session=session)
        m.build(recipe="mnemis")
        unions = {}
        ranked = {}
        for recipe in ("with_session", "without_session", "window2"):
            with recorded_unions() as seen:
                r = m.search(SESSION_QUERY, recipe=recipe, k=50, max_tokens=None)
            (unions[recipe],) = seen
            episodes = [h.id for h in r.hits if h.kind == "episode"]
            ranked[recipe] = episodes
    session = unions["with_session"].session
    # every turn of the first session lends from the turn naming the boat; none elsewhere
    assert set(session) == {f"t{i}" for i in range(5)}
    assert session[0] == "t0"
    # the whole first session ranks above the van, and no lower than without the session
    # (since Mnemis reads the parse, the session's turns rank above the van without it too)
    first = [f"t{i}" for i in range(5)]
    with_, without = ranked["with_session"], ranked["without_session"]
    assert max(map(with_.index, first)) < with_.index("t6")
    assert max(map(with_.index, first)) <= max(map(without.index, first))
    # with a window of two turns, the catamaran is too far from the boat's turn
    assert set(unions["window2"].session) == {"t0", "t1", "t2"}
    assert unions["without_session"].session == []


def test_listwise_windows_carry_the_best_of_the_whole_union_to_the_top() -> None:
    """Every slot of the budget is the reranker's choice, not only the first half window:
    55 items in runs of 20, merged (test_mnemis_rerank.py has the calls per union size)."""
    import asyncio
    import random

    from memstrata.designs.mnemis.rerank import RERANK_WINDOW, listwise

    calls: list[int] = []

    async def by_value(query: str, kind: str, texts: list[str]) -> list[int]:
        calls.append(len(texts))
        return sorted(range(len(texts)), key=lambda i: -int(texts[i]))

    ids = [str(v) for v in range(55)]
    random.Random(3).shuffle(ids)
    order = asyncio.run(listwise(by_value, "q", "episode", ids, lambda i: i, 20))
    assert sorted(order) == sorted(ids)  # nothing lost or repeated
    assert order[:20] == [str(v) for v in range(54, 34, -1)]
    # three runs (20, 20, 15) and two merge calls; the sliding windows took 5 calls
    assert max(calls) == RERANK_WINDOW and len(calls) == 5


def test_a_turn_not_built_yet_outranks_a_built_one_that_does_not_match(
    store_at: Callable[[str], str], embedder
) -> None:
    """One turn built, a second added and not built: a search for the second finds it
    first. The first turn's fact and entities, pointing away from the query, lent it
    their ranks and hid the new turn."""
    with Memory.open(
        store_at("m"), embedder=embedder, recipe="mnemis", **{"build.mode": "manual"}
    ) as m:
        m.add("Maya booked flights to Lisbon.", id="m0")
        m.build(recipe="mnemis")
        m.add("Maya adopted a cat named Pepper.", id="m1")
        result = m.search("Pepper the cat", recipe="mnemis", k=5)
    assert result.pending == 1
    assert [h.sources for h in result.hits if h.kind == "episode"][0] == ["m1"]
