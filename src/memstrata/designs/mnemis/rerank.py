"""The llm tier's reranking (section 2.3): a listwise LLM orders each kind's whole union.

The paper reranks the union of both routes with a cross-encoder and then cuts it to the
budgets (k episodes, 2k facts and entities). A listwise model reads ``RERANK_WINDOW``
candidates per call, far fewer than a union holds, so the union is ranked as a
tournament that makes every slot of the budget the reranker's choice:

* **runs**: the union in windows of ``RERANK_WINDOW``, each ordered by one call;
* **merges**: up to ``RERANK_FAN`` runs at a time. Each call shows the reranker the next
  unfixed items of every run (at least two per run, shared out in turn) and fixes the
  window's order down to the highest-placed last shown item of any run with more left:
  nothing unseen can beat those, as each run is in the reranker's own order. A merge
  stops once ``budget`` items are fixed; with more than ``RERANK_FAN`` runs, each group's
  winners are merged again until one list is left.

With a consistent reranker the first ``budget`` items are exactly its preferred ones,
wherever they sat in the union. A union of n items costs ``ceil(n / RERANK_WINDOW)``
calls for the runs and at least one per merge; every merge call fixes at least one item.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from memstrata.designs.mnemis.prompts import Ranking, ask, rerank, rerank_prompt_tokens
from memstrata.llm.base import LLMClient

# LLM reranking: (query, kind, [candidate texts]) -> candidate indexes, best first.
Reranker = Callable[[str, str, list[str]], Awaitable[list[int]]]

#: candidates the reranker reads per call
RERANK_WINDOW = 20
#: runs merged at once, so that every run shows at least two items per merge call
RERANK_FAN = RERANK_WINDOW // 2


def llm_reranker(llm: LLMClient) -> Any:
    """Windows ordered by :func:`prompts.rerank`, candidates whole up to the prompt size
    the model's context allows (:func:`prompts.rerank_prompt_tokens`)."""
    room = rerank_prompt_tokens(llm.budgets)

    async def rank(query: str, kind: str, texts: list[str]) -> list[int]:
        answer = await ask(llm, rerank(query, kind, texts, room), "mnemis.rerank")
        assert isinstance(answer, Ranking)
        return answer.order

    return rank


async def listwise(
    reranker: Reranker,
    query: str,
    kind: str,
    ids: list[str],
    text: Callable[[str], str],
    budget: int,
) -> list[str]:
    """The reranker's order of all of ``ids`` (distinct): the first ``budget`` (and any
    item a merge fixed past them) as the module's tournament ranks them, then what each
    merge left, the last merge's first, its runs interleaved (every run's best before any
    run's second). Ids the reranker leaves out of a window keep their place after the
    ones it ordered, so a failed call leaves its window in the order it came in."""

    async def order(window: list[str]) -> list[str]:
        ranked = await reranker(query, kind, [text(i) for i in window])
        seen = [window[i] for i in dict.fromkeys(ranked) if 0 <= i < len(window)]
        taken = set(seen)
        return seen + [i for i in window if i not in taken]

    if len(ids) < 2:
        return list(ids)
    chunks = [ids[i : i + RERANK_WINDOW] for i in range(0, len(ids), RERANK_WINDOW)]
    runs = list(await asyncio.gather(*(order(c) for c in chunks)))
    rest: list[str] = []
    while len(runs) > 1:
        groups = [runs[i : i + RERANK_FAN] for i in range(0, len(runs), RERANK_FAN)]
        merged = await asyncio.gather(*(_merge(order, g, budget) for g in groups))
        runs = [fixed for fixed, _ in merged]
        left = [run for _, runs_left in merged for run in runs_left]
        rest = [
            run[p] for p in range(max(map(len, left), default=0)) for run in left if p < len(run)
        ] + rest
    return runs[0] + rest


async def _merge(
    order: Callable[[list[str]], Awaitable[list[str]]], runs: list[list[str]], want: int
) -> tuple[list[str], list[list[str]]]:
    """At least the first ``want`` items of ``runs`` (each in the reranker's order) in the
    reranker's order, or all of them when they are fewer; and what is left of the runs."""
    runs = [run for run in runs if run]
    fixed: list[str] = []
    while len(runs) > 1 and len(fixed) < want:
        shown = _shares(runs)
        ranked = await order([i for run, n in zip(runs, shown, strict=True) for i in run[:n]])
        at = {i: p for p, i in enumerate(ranked)}
        cut = min(
            (at[run[n - 1]] for run, n in zip(runs, shown, strict=True) if n < len(run)),
            default=len(ranked) - 1,
        )
        done = set(ranked[: cut + 1])
        fixed += ranked[: cut + 1]
        runs = [left for run in runs if (left := [i for i in run if i not in done])]
    if len(fixed) < want and runs:
        fixed, runs = fixed + runs[0], []
    return fixed, runs


def _shares(runs: list[list[str]]) -> list[int]:
    """How many of each run's next items a merge call shows: the window shared out in
    turn, one item per run at a time."""
    shown = [0] * len(runs)
    room = RERANK_WINDOW
    while room and any(n < len(run) for n, run in zip(shown, runs, strict=True)):
        for j, run in enumerate(runs):
            if room and shown[j] < len(run):
                shown[j] += 1
                room -= 1
    return shown
