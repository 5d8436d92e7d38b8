"""The llm tier's reranking (designs/mnemis/rerank.py): the whole budget is the
reranker's choice, its call counts, whole candidates within the prompt's token budget,
and LLM failures that fall back and are counted instead of failing the search."""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from memstrata.config import Config
from memstrata.designs.mnemis.graph import BUILDER, PAPER_BUILDER, Graph
from memstrata.designs.mnemis.prompts import RERANK_PROMPT_TOKENS, rerank, rerank_prompt_tokens
from memstrata.designs.mnemis.records import Category
from memstrata.designs.mnemis.rerank import RERANK_WINDOW, listwise
from memstrata.designs.mnemis.route import MnemisRoute
from memstrata.llm import LLMClient
from memstrata.llm.budgets import Budgets
from memstrata.llm.scripted import ScriptedBackend
from memstrata.llm.types import Message
from memstrata.memory import Memory
from memstrata.models import Entity, Fact, Span
from memstrata.retrieval.context import count_tokens
from memstrata.store import Store


def _by_value(calls: list[int]):
    """A consistent reranker: any window ordered by its candidates' values, highest first;
    it records each window's size."""

    async def rank(query: str, kind: str, texts: list[str]) -> list[int]:
        calls.append(len(texts))
        return sorted(range(len(texts)), key=lambda i: -int(texts[i]))

    return rank


def _listwise(ids: list[str], budget: int, rank) -> list[str]:
    return asyncio.run(listwise(rank, "q", "fact", ids, lambda i: i, budget))


# union size -> reranker calls, the union in ascending order (its best items last, as
# System-2's arrive) and shuffled; the sliding windows before took 1, 3, 5 and 9 calls
# and fixed only their top 10
CALLS_BUDGET_20 = {20: (1, 1), 40: (4, 4), 60: (7, 5), 100: (10, 8)}
CALLS_BUDGET_10 = {20: (1, 1), 40: (3, 3), 60: (5, 4), 100: (8, 7)}


@pytest.mark.parametrize("n", [20, 40, 60, 100])
@pytest.mark.parametrize("budget", [10, 20])
def test_the_whole_budget_is_the_reranker_choice_and_the_calls_are_counted(
    n: int, budget: int
) -> None:
    expected = (CALLS_BUDGET_20 if budget == 20 else CALLS_BUDGET_10)[n]
    ascending = [str(v) for v in range(n)]
    shuffled = list(ascending)
    random.Random(3).shuffle(shuffled)
    for ids, want in zip((ascending, shuffled), expected, strict=True):
        calls: list[int] = []
        order = _listwise(ids, budget, _by_value(calls))
        assert sorted(order) == sorted(ids) and len(order) == n  # nothing lost or repeated
        assert order[:budget] == [str(v) for v in range(n - 1, n - 1 - budget, -1)]
        assert len(calls) == want and max(calls) <= RERANK_WINDOW


def test_a_union_of_many_runs_is_merged_in_groups() -> None:
    """200 items make ten runs; 420 make 21, more than one merge takes: the groups'
    winners are merged again, and the budget is still exact."""
    for n in (200, 420):
        ids = [str(v) for v in range(n)]
        random.Random(n).shuffle(ids)
        calls: list[int] = []
        order = _listwise(ids, 20, _by_value(calls))
        assert sorted(order) == sorted(ids)
        assert order[:20] == [str(v) for v in range(n - 1, n - 21, -1)]
        assert max(calls) <= RERANK_WINDOW


def test_an_inconsistent_or_silent_reranker_still_orders_every_id_once() -> None:
    ids = [str(v) for v in range(73)]
    calls: list[int] = []

    async def backwards(query: str, kind: str, texts: list[str]) -> list[int]:
        calls.append(len(texts))  # whatever it is shown, the last shown first
        return list(range(len(texts)))[::-1]

    order = _listwise(ids, 20, backwards)
    # four runs, then merge calls that fix at least one item each
    assert sorted(order) == sorted(ids) and 5 <= len(calls) <= 4 + 20

    async def silent(query: str, kind: str, texts: list[str]) -> list[int]:
        return []  # every window keeps the order it came in

    order = _listwise(ids, 20, silent)
    assert order[:20] == ids[:20] and sorted(order) == sorted(ids)


def test_past_the_budget_what_the_merge_left_follows_interleaved() -> None:
    """Every run's best leftover comes before any run's second."""
    ids = [str(v) for v in range(60)]  # runs 0-19, 20-39, 40-59, each ordered descending
    order = _listwise(ids, 10, _by_value([]))
    # two merge calls fix 59-54 and 53-48 (run 2 runs out of shown items first)
    assert order[:12] == [str(v) for v in range(59, 47, -1)]
    assert order[12:18] == ["19", "39", "47", "18", "38", "46"]


# whole candidates ----------------------------------------------------------------------


def test_a_long_candidate_reaches_the_prompt_whole_when_the_window_fits() -> None:
    long = " ".join(f"word{i}" for i in range(200))[:1000]
    assert len(long) == 1000
    texts = [f"candidate {i}" for i in range(19)] + [long]
    messages, _ = rerank("q", "episode", texts)
    assert long in messages[-1].content
    assert sum(count_tokens(m.content) for m in messages) <= RERANK_PROMPT_TOKENS


def test_only_a_window_over_the_budget_has_its_longest_candidates_cut() -> None:
    long = [" ".join(f"w{j}x{i}" for i in range(400)) for j in range(20)]
    short = "Maya flies to Lisbon."
    messages, _ = rerank("q", "episode", [short, *long[:19]], budget=2_000)
    user = messages[-1].content
    # as much as the budget holds (within a token per candidate), not a fixed cut
    assert 2_000 - 20 <= sum(count_tokens(m.content) for m in messages) <= 2_000
    assert f"0: {short}\n" in user  # the short one whole
    lines = re.findall(r"^(\d+): (.*)$", user, flags=re.M)
    cut = [text for i, text in lines if i != "0"]
    assert len(cut) == 19 and all(t.endswith("…") for t in cut)
    sizes = {count_tokens(t) for t in cut}
    assert max(sizes) - min(sizes) <= 1  # one common length


# the Mnemis probe: a hand-made graph, a scripted LLM -----------------------------------

QUERY = "Which plants does Maya grow in her garden?"
GARDEN = [f"Maya grows tomato seedling number {i} in her garden" for i in range(60)]
REPAIRS = [f"Zorblat repaired the red bicycle of neighbour {i}" for i in range(40)]
#: the perfect reranker's hidden score: every one of System-2's facts above System-1's
SCORE = {t: 100 + i for i, t in enumerate(REPAIRS)} | {t: i for i, t in enumerate(GARDEN)}


def _probe(path: Path, embedder, builder: str = BUILDER) -> None:
    """Ten turns and a graph: 60 facts on Maya's garden, which System-1 finds, and 40 on
    Zorblat's repairs, which only System-2 reaches (category Mechanics, entity
    Zorblat). A second layer: Outdoors over Gardening, Crafts over Mechanics."""
    with Memory.open(path, embedder=embedder, **{"build.mode": "manual"}) as m:
        for i in range(5):
            m.add(f"Maya talked about her garden, day {i}.", id=f"t{i}", speaker="Maya")
        for i in range(5, 10):
            m.add(f"Zorblat fixed bicycles all day {i}.", id=f"t{i}", speaker="Zorblat")
        graph = Graph(m.store, embedder, "default", builder)
        cited = {"Maya": "t0", "Garden": "t1", "Zorblat": "t5", "Bicycle": "t6"}
        ent = {
            name: graph.add_entity(
                Entity(namespace="default", name=name, sources=[Span(episode=ep, start=0, end=1)])
            ).id
            for name, ep in cited.items()
        }
        for texts, (subj, obj), first in (
            (GARDEN, ("Maya", "Garden"), 0),
            (REPAIRS, ("Zorblat", "Bicycle"), 5),
        ):
            for i, text in enumerate(texts):
                graph.add_fact(
                    Fact(
                        namespace="default",
                        subject_id=ent[subj],
                        object_id=ent[obj],
                        entity_ids=[ent[subj], ent[obj]],
                        fact=text,
                        sources=[Span(episode=f"t{first + i % 5}", start=0, end=1)],
                    )
                )
        for name, kids in (
            ("Gardening", ["Maya", "Garden"]),
            ("Mechanics", ["Zorblat", "Bicycle"]),
        ):
            spans = [Span(episode=cited[k], start=0, end=1) for k in kids]
            cat = Category(
                namespace="default",
                name=name,
                layer=1,
                child_ids=[ent[k] for k in kids],
                sources=spans,
            )
            graph.categories[cat.id] = cat
            graph.touch(cat)
            top = Category(
                namespace="default",
                name={"Gardening": "Outdoors", "Mechanics": "Crafts"}[name],
                layer=2,
                child_ids=[cat.id],
                sources=spans,
            )
            graph.categories[top.id] = top
            graph.touch(top)
        graph.flush()


Answer = Callable[[list[Message]], str]


def _select(messages: list[Message]) -> str:
    """Global Selection: Crafts at the top layer, Mechanics below it, then Zorblat."""
    nodes = re.findall(r'name: "([^"]*)", uuid: "([^"]*)"', messages[1].content)
    wanted = ("Crafts", "Mechanics", "Zorblat")
    picked = [{"name": n, "uuid": u} for n, u in nodes if n in wanted]
    return json.dumps({"nodes": picked})


def _perfect(messages: list[Message]) -> str:
    """Any window ordered by the hidden score (candidates it does not know score 0)."""
    listed = re.findall(r"^(\d+): (.*)$", messages[1].content, flags=re.M)
    order = sorted(range(len(listed)), key=lambda i: -SCORE.get(listed[i][1], 0))
    return json.dumps({"order": order})


class _LLM:
    """A scripted LLM: ``select`` answers Global Selection, ``rank`` the reranker; each
    rerank window is recorded by kind."""

    def __init__(self, select: Answer = _select, rank: Answer = _perfect) -> None:
        self.select, self.rank = select, rank
        self.windows: dict[str, list[list[str]]] = {}

    def __call__(self, messages: list[Message]) -> str:
        system = messages[0].content
        if "hierarchical knowledge graph" in system:
            return self.select(messages)
        if len(messages) == 2:  # not the client asking again after an unusable reply
            kind = re.search(r"Order the (\w+) candidates", system).group(1)  # type: ignore[union-attr]
            listed = re.findall(r"^\d+: (.*)$", messages[1].content, flags=re.M)
            self.windows.setdefault(kind, []).append(listed)
        return self.rank(messages)


def _search(
    path: Path, embedder, monkeypatch: pytest.MonkeyPatch, llm: _LLM, recipe: str = "mnemis"
):
    def scripted(config: Config, store: Store, namespace: str | None = None) -> LLMClient:
        return LLMClient(ScriptedBackend([llm] * 500), usage=store, namespace=namespace)

    monkeypatch.setattr("memstrata.memory.make_llm", scripted)
    with Memory.open(
        path, embedder=embedder, llm={"kind": "gguf"}, **{"build.mode": "manual"}
    ) as m:
        # k = 50: 10 per share, so 10 episodes, 2k = 20 facts and 20 entities
        result = m.search(QUERY, recipe=recipe, k=50, max_tokens=None)
        route = next(r for r in m.engine.routes(recipe) if isinstance(r, MnemisRoute))
        usage = m.stats()["llm"]
    return result, dict(route.fallbacks), usage


@pytest.fixture
def probe(tmp_path: Path, embedder) -> Path:
    path = tmp_path / "probe.db"
    _probe(path, embedder)
    return path


@pytest.mark.parametrize("recipe", ["mnemis", "mnemis-paper"])
def test_probe_with_a_perfect_reranker_fills_the_2k_budget_with_system2(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch, recipe: str
) -> None:
    """Sliding windows fixed the top 10 only: the other 10 of the 2k = 20 facts were
    System-1's, in the order the union met them (10 of 20). Now all 20 are System-2's,
    in the fused recipe and in the paper's (whose System-1 brings its top 2k facts)."""
    builder = PAPER_BUILDER if recipe == "mnemis-paper" else BUILDER
    _probe(tmp_path / "probe.db", embedder, builder)
    llm = _LLM()
    result, fallbacks, _ = _search(tmp_path / "probe.db", embedder, monkeypatch, llm, recipe)
    facts = [h for h in result.hits if h.kind == "fact"]
    shown = {t for w in llm.windows["fact"] for t in w}
    # the union: System-2's 40 and what System-1 found of the garden's 60 (the
    # paper's System-1: its top 2k = 20)
    assert set(REPAIRS) <= shown <= set(REPAIRS) | set(GARDEN)
    assert len(shown) == 60 if recipe == "mnemis-paper" else len(shown) >= 90
    assert len(facts) == 20
    assert sum(h.routes == ["system2"] for h in facts) == 20
    assert [h.text for h in facts] == REPAIRS[::-1][:20]  # the reranker's own top 20
    assert not fallbacks


@pytest.mark.parametrize(("recipe", "layers"), [("mnemis", {1}), ("mnemis-paper", {1, 2})])
def test_the_paper_recipe_brings_the_categories_of_every_walked_layer(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch, recipe: str, layers: set[int]
) -> None:
    """Global Selection walked Crafts (layer 2) and Mechanics (layer 1): the fused recipe
    keeps the lowest layer, the paper's every one, as entity hits whose sources are
    their entities' turns."""
    builder = PAPER_BUILDER if recipe == "mnemis-paper" else BUILDER
    _probe(tmp_path / "probe.db", embedder, builder)
    llm = _LLM()
    result, _, _ = _search(tmp_path / "probe.db", embedder, monkeypatch, llm, recipe)
    cats = [h for h in result.hits if h.metadata.get("category")]
    assert {h.metadata["layer"] for h in cats} == layers
    assert {h.text.split("] ")[1].split(":")[0] for h in cats} == (
        {"Mechanics", "Crafts"} if recipe == "mnemis-paper" else {"Mechanics"}
    )
    assert all(h.kind == "entity" and set(h.sources) == {"t5", "t6"} for h in cats)
    # the reranker read them among the entities
    shown = {t for w in llm.windows["entity"] for t in w}
    assert any(t.startswith("Crafts") for t in shown) == (recipe == "mnemis-paper")


def test_the_paper_recipe_sends_the_paper_selection_prompt(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    _probe(tmp_path / "probe.db", embedder, PAPER_BUILDER)
    sent: list[str] = []

    def select(messages: list[Message]) -> str:
        sent.append(messages[0].content)
        return _select(messages)

    _search(tmp_path / "probe.db", embedder, monkeypatch, _LLM(select=select), "mnemis-paper")
    assert len(sent) == 3  # one prompt per layer walked: Crafts, Mechanics, Zorblat
    assert all("- Likely has sub-nodes that may be helpful." in s for s in sent)


def test_the_rerank_prompt_follows_the_model_context() -> None:
    """The bundled model's 3,200 tokens of 4,096; a 128K-context model reads a window of
    long candidates whole where the bundled model's budget cuts them."""
    assert rerank_prompt_tokens(Budgets.of("small")) == RERANK_PROMPT_TOKENS
    chat = rerank_prompt_tokens(Budgets.of("chat"))
    assert chat == RERANK_PROMPT_TOKENS * 131_072 // 4_096
    long = [" ".join(f"w{j}x{i}" for i in range(400)) for j in range(20)]
    small_prompt, _ = rerank("q", "episode", long)
    chat_prompt, _ = rerank("q", "episode", long, chat)
    assert all(t in chat_prompt[1].content for t in long)
    assert not any(t in small_prompt[1].content for t in long)


def _raise(messages: list[Message]) -> str:
    raise RuntimeError("the server went away")


def _garbage(messages: list[Message]) -> str:
    return "Sure! Here is my answer: the first one."


def _invented(messages: list[Message]) -> str:
    return json.dumps({"nodes": [{"name": "Mechanics", "uuid": "deadbeef"}]})


@pytest.mark.parametrize("select", [_raise, _garbage, _invented])
def test_a_failed_selection_falls_back_to_the_heuristic_one_and_is_counted(
    probe: Path, embedder, monkeypatch: pytest.MonkeyPatch, select: Answer
) -> None:
    result, fallbacks, usage = _search(probe, embedder, monkeypatch, _LLM(select=select))
    assert result.hits and fallbacks == {"select_failed": 1}
    if select is not _invented:  # a reply that named unknown nodes is no failed call
        assert usage["mnemis.select"]["failures"] == 1


@pytest.mark.parametrize("fail", [_raise, _garbage])
def test_a_failed_rerank_call_keeps_its_window_and_is_counted(
    probe: Path, embedder, monkeypatch: pytest.MonkeyPatch, fail: Answer
) -> None:
    first: list[str] = []

    def first_fails(messages: list[Message]) -> str:
        """The first window fails, asked again too; every other is ordered."""
        first[:] = first or [messages[1].content]
        return fail(messages) if messages[1].content == first[0] else _perfect(messages)

    llm = _LLM(rank=first_fails)
    result, fallbacks, usage = _search(probe, embedder, monkeypatch, llm)
    assert result.hits and fallbacks == {"rerank_failed": 1}
    assert usage["mnemis.rerank"]["failures"] == 1
    facts = [h for h in result.hits if h.kind == "fact"]
    assert sum(h.routes == ["system2"] for h in facts) == 20  # an entity window failed


def test_when_every_rerank_call_fails_the_union_keeps_its_order(
    probe: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = _LLM(rank=_garbage)
    result, fallbacks, usage = _search(probe, embedder, monkeypatch, llm)
    calls = sum(len(w) for w in llm.windows.values())
    assert fallbacks == {"rerank_failed": calls} and calls >= 3
    assert usage["mnemis.rerank"]["failures"] == calls
    facts = [h for h in result.hits if h.kind == "fact"]
    assert len(facts) == 20 and all(h.routes == ["system1"] for h in facts)  # arrival order


def test_a_programming_error_in_the_reranker_still_raises(
    probe: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(llm: LLMClient):
        async def rank(query: str, kind: str, texts: list[str]) -> list[int]:
            raise KeyError("a bug, not an LLM failure")

        return rank

    monkeypatch.setattr("memstrata.designs.mnemis.route.llm_reranker", broken)
    with pytest.raises(KeyError):
        _search(probe, embedder, monkeypatch, _LLM())
