"""``k`` is the number of hits a search returns, whatever the recipe: a recipe's kinds
share it (its ``fusion.budgets`` are their shares, filled by rank), and ``ask`` reads the
same ``k``. Every built-in recipe, built on the heuristic tier over the bundled
conversation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.embed import MiniLMEmbedder
from memstrata.importers import jsonl

NS = "demo"
QUERIES = ["Where is Maya's talk?", "What is the name of Tomas's dog?", "Who is Ines?"]


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder) -> Iterator[Memory]:
    path = resources.files("memstrata.data").joinpath("sample_conversation.jsonl")
    turns = [item for _, item in jsonl.read(Path(str(path))) if isinstance(item, dict)]
    db = tmp_path_factory.mktemp("k") / "k.db"
    with Memory.open(db, embedder=embedder, **{"build.mode": "manual"}) as m:
        m.add_many(turns, namespace=NS)
        built: set[str] = set()
        for r in m.recipes():
            if r["builders"] and not set(r["builders"]) <= built:
                m.build(NS, recipe=r["name"], tier="heuristic")
                built.update(r["builders"])
        yield m


def recipes(memory: Memory) -> list[str]:
    return [r["name"] for r in memory.recipes()]


@pytest.mark.parametrize("k", [1, 3, 7])
def test_every_recipe_returns_k_hits_at_most(memory: Memory, k: int) -> None:
    for recipe in recipes(memory):
        fusion = memory.engine.recipe(recipe).fusion
        for query in QUERIES:
            hits = memory.search(query, namespace=NS, k=k, recipe=recipe, max_tokens=None).hits
            assert 0 < len(hits) <= k, (recipe, query, len(hits))
            if not fusion.budgets:  # one share: as many as asked for, if memory has them
                wide = memory.search(query, namespace=NS, k=200, recipe=recipe).hits
                assert len(hits) == min(k, len(wide)), (recipe, query)
        # mnemis' routes find plenty of each kind here: exactly k
        if recipe == "mnemis":
            assert all(
                len(memory.search(q, namespace=NS, k=k, recipe=recipe).hits) == k for q in QUERIES
            )


def test_the_kinds_share_k_in_proportion_to_their_budgets(memory: Memory) -> None:
    """mnemis: episodes 1, facts 2, entities 2 (the paper's k, 2k, 2k as shares)."""
    hits = memory.search(QUERIES[0], namespace=NS, k=10, recipe="mnemis", max_tokens=None).hits
    kinds = Counter(h.kind for h in hits)
    assert kinds == {"episode": 2, "fact": 4, "entity": 4}, kinds
    # kinds keep the recipe's order, and each kind comes best first
    order = [h.kind for h in hits]
    assert order == sorted(order, key=["episode", "fact", "entity"].index)
    for kind in kinds:
        fused = [h.why.fused for h in hits if h.kind == kind and h.why is not None]
        assert len(fused) == kinds[kind] and fused == sorted(fused, reverse=True)


def test_a_benchmark_asks_for_each_kind_as_deep_as_before(memory: Memory) -> None:
    """``FusionSpec.total``: the k whose share of 1 is 10, for mnemis 50 hits: 10
    episodes, 20 facts, 20 entities, as a search of k = 10 returned them before k
    counted every hit."""
    fusion = memory.engine.recipe("mnemis").fusion
    assert fusion.total(10) == 50 and fusion.unit(50) == 10 and fusion.unit(10) == 2
    hits = memory.search(QUERIES[0], namespace=NS, k=50, recipe="mnemis", max_tokens=None).hits
    assert Counter(h.kind for h in hits)["episode"] == 10


@pytest.mark.parametrize("recipe", ["default", "mnemis", "personalai", "memtree"])
def test_ask_reads_the_same_k(memory: Memory, recipe: str) -> None:
    searched = memory.search(QUERIES[0], namespace=NS, k=3, recipe=recipe)
    answer = memory.ask(QUERIES[0], namespace=NS, k=3, recipe=recipe)
    assert 0 < len(answer.hits) <= 3  # what the answerer was shown, in its own order
    assert {h.id for h in answer.hits} <= {h.id for h in searched.hits}
