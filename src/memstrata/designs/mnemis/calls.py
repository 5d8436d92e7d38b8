"""The LLM adapters the Mnemis builder and route are given: hierarchy grouping,
category descriptions and Global Selection, each through its prompt in
:mod:`memstrata.designs.mnemis.prompts`, sent by :func:`~memstrata.designs.mnemis.prompts.ask`.
The rerank adapter is :func:`memstrata.designs.mnemis.rerank.llm_reranker`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from memstrata.designs.mnemis.prompts import (
    CategoryDescriptions,
    CategoryGroups,
    NodeSelection,
    ask,
    categorize,
    describe_categories,
    select_nodes,
)
from memstrata.errors import MemstrataError
from memstrata.llm.base import LLMClient
from memstrata.llm.schema import list_reply_tokens


def category_grouper(llm: LLMClient, chunk: int = 20, paper: bool = False) -> Any:
    """Hierarchy grouping through :func:`categorize` (``paper``: in the paper's words),
    ``chunk`` nodes per call. Returns the groups and, per category name, the
    description and tags the model wrote."""

    async def group(
        layer: int,
        nodes: list[tuple[str, str]],
        existing: list[tuple[str, str]],
        prev_example: str = "",
    ) -> tuple[list[tuple[str, list[int]]], dict[str, tuple[str, list[str]]]]:
        merged: dict[str, list[int]] = {}
        described: dict[str, tuple[str, list[str]]] = {}
        known = list(existing)
        for start in range(0, len(nodes), chunk):
            part = nodes[start : start + chunk]
            prompt = categorize(layer, part, known, prev_example, paper)
            answer = await ask(llm, prompt, "mnemis.hierarchy")
            assert isinstance(answer, CategoryGroups)
            for g in answer.categories:
                name = g.category.strip()
                if not name:
                    continue
                merged.setdefault(name, []).extend(
                    start + i for i in g.indexes if 0 <= i < len(part)
                )
                tags = [t.strip() for t in g.tag if t.strip()][:5]
                if name not in described or (g.description.strip() and not described[name][0]):
                    described[name] = (g.description.strip(), tags)
                if name not in {n for n, _ in known}:
                    known.append((name, g.description.strip()))
        return list(merged.items()), described

    return group


def category_describer(llm: LLMClient, chunk: int = 8) -> Any:
    """Descriptions through :func:`describe_categories`, ``chunk`` categories per call,
    the calls issued together. A call that fails leaves its categories undescribed
    (``None``), counted in the client's usage; the hierarchy keeps them marked."""

    async def one(part: list[tuple[str, str, list[tuple[str, str]]]]) -> list[Any]:
        try:
            answer = await ask(llm, describe_categories(part), "mnemis.describe")
        except MemstrataError:
            return [None] * len(part)
        assert isinstance(answer, CategoryDescriptions)
        out: list[Any] = [None] * len(part)
        for d in answer.categories:
            if 0 <= d.index < len(part) and out[d.index] is None and d.description.strip():
                tags = [t.strip() for t in d.tag if t.strip()][:5]
                out[d.index] = (d.description.strip(), tags)
        return out

    async def describe(
        items: list[tuple[str, str, list[tuple[str, str]]]],
    ) -> list[tuple[str, list[str]] | None]:
        parts = [items[i : i + chunk] for i in range(0, len(items), chunk)]
        done = await asyncio.gather(*(one(p) for p in parts))
        return [w for part in done for w in part]

    return describe


def node_selector(llm: LLMClient, paper: bool = False) -> Any:
    """Global Selection through :func:`select_nodes` (``paper``: in the paper's words)."""

    async def select(query: str, nodes: list[tuple[str, str, list[str]]]) -> list[tuple[str, bool]]:
        # the model may pick every node shown: the reply has room for all of them
        picks = [{"name": n, "uuid": u, "get_all_children": False} for u, n, _ in nodes]
        budget = list_reply_tokens(picks, llm.budgets.tokens("mnemis.select"))
        answer = await ask(llm, select_nodes(query, nodes, paper), "mnemis.select", budget)
        assert isinstance(answer, NodeSelection)
        return [(n.uuid, n.get_all_children) for n in answer.nodes]

    return select
