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
def test_every_recipe_returns_k_hits(memory: Memory, k: int) -> None:
    for recipe in recipes(memory):
        for query in QUERIES:
            hits = memory.search(query, namespace=NS, k=k, recipe=recipe, max_tokens=None).hits
            wide = memory.search(query, namespace=NS, k=200, recipe=recipe, max_tokens=None).hits
            # as many as asked for, unless the recipe finds fewer at all
            assert len(hits) == min(k, len(wide)), (recipe, query, len(hits))


def test_the_kinds_share_k_in_proportion_to_their_budgets(memory: Memory) -> None:
    """mnemis: episodes 1, facts 2, entities 2 (the paper's k, 2k, 2k as shares)."""
    hits = memory.search(QUERIES[0], namespace=NS, k=10, recipe="mnemis", max_tokens=None).hits
    kinds = Counter(h.kind for h in hits)
    assert kinds == {"episode": 2, "fact": 4, "entity": 4}, kinds
    # kinds keep the recipe's order, and each kind's best hits come first
    order = [h.kind for h in hits]
    assert order == sorted(order, key=["episode", "fact", "entity"].index)
    wide = memory.search(QUERIES[0], namespace=NS, k=200, recipe="mnemis", max_tokens=None).hits
    for kind in kinds:
        assert [h.id for h in hits if h.kind == kind] == [h.id for h in wide if h.kind == kind][
            : kinds[kind]
        ]


def test_a_kind_short_of_its_share_leaves_it_to_the_others(memory: Memory) -> None:
    """personalai: episodes 1, theses 1, facts 2; with few facts or theses, episodes fill."""
    wide = memory.search(QUERIES[1], namespace=NS, k=200, recipe="personalai", max_tokens=None)
    have = Counter(h.kind for h in wide.hits)
    k = 4 * min(have.values()) + 4  # more than the shortest kind's share can hold
    hits = memory.search(QUERIES[1], namespace=NS, k=k, recipe="personalai", max_tokens=None).hits
    assert len(hits) == min(k, len(wide.hits))


@pytest.mark.parametrize("recipe", ["default", "mnemis", "personalai", "memtree"])
def test_ask_reads_the_same_k(memory: Memory, recipe: str) -> None:
    searched = memory.search(QUERIES[0], namespace=NS, k=3, recipe=recipe)
    answer = memory.ask(QUERIES[0], namespace=NS, k=3, recipe=recipe)
    assert 0 < len(answer.hits) <= 3  # what the answerer was shown, in its own order
    assert {h.id for h in answer.hits} <= {h.id for h in searched.hits}
