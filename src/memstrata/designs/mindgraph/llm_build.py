"""The llm tier's build stage (section 3.2): one D.1 call per token-bounded chunk.

The input is cut by :func:`memstrata.retrieval.chunking.chunk_spans` into chunks of at
most ``chunk_tokens`` (the paper uses 8,192). At chunk ``t`` the build LLM sees the
question, the graph after chunk ``t-1`` as JSON (``(empty)`` at first) and the chunk
with its position; each returned operation is applied on its own, its quotes located in
that chunk (:meth:`ConceptGraph.apply`), and a rejected one is counted. A chunk whose
call fails after the client's retries is counted in ``failed_chunks`` and skipped: the
graph stays valid.

``state_nodes`` bounds the graph state shown (the latest nodes and the edges among
them) for models with a small context; the paper shows the whole graph (None). With
``window`` (the model's context, when it states one) and no ``state_nodes``, each call
shows the most latest nodes that fit beside the prompt, the chunk and the reply: a
graph that outgrows a 4,096-token window would otherwise make every later call fail.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from memstrata.designs.mindgraph import prompts
from memstrata.designs.mindgraph.graph import ConceptGraph
from memstrata.llm.base import LLMClient
from memstrata.llm.salvage import Salvage
from memstrata.llm.types import LLMError, Message
from memstrata.retrieval.context import count_tokens

logger = logging.getLogger("memstrata.mindgraph")
EMPTY = "(empty)"


#: tokens kept free beside a fitted prompt: the chat template's and the counts' slack
MARGIN = 64


def most_that_fit(lo: int, hi: int, fits: Callable[[int], bool]) -> int:
    """The largest count in ``[lo, hi]`` that ``fits`` (``lo`` when none does), by a
    binary search: what a count brings into a prompt grows with the count."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def prompt_tokens(messages: list[Message]) -> int:
    return sum(count_tokens(m.content) for m in messages)


def fitted_state(graph: ConceptGraph, room: int, ranked: list[str] | None = None) -> str:
    """The state of the most nodes whose JSON takes at most ``room`` tokens (none when
    even one does not fit): the latest ones, or the first of ``ranked``."""

    def state(k: int) -> str:
        return graph.state_json(k) if ranked is None else graph.state_json(ids=ranked[:k])

    def fits(k: int) -> bool:
        return count_tokens(state(k)) <= room

    n = len(graph.nodes)
    return state(n if fits(n) else most_that_fit(0, n - 1, fits))


async def build_llm(
    llm: LLMClient,
    text: str,
    question: str,
    chunks: list[tuple[int, int]],
    *,
    graph: ConceptGraph | None = None,
    first_index: int = 0,
    total: int | None = None,
    require_span: bool = False,
    max_tokens: int | None = None,
    state_nodes: int | None = None,
    window: int | None = None,
    errors: list[str] | None = None,
) -> tuple[ConceptGraph, int]:
    """Fold ``chunks`` (spans of ``text``) into ``graph``; returns it and failed chunks
    (whose errors go to ``errors`` when given). ``max_tokens`` is each call's completion
    budget, and the reply's bounds are the model's (default: its budgets,
    :mod:`memstrata.llm.budgets`)."""
    max_tokens = max_tokens or llm.budgets.tokens(prompts.BUILD_STAGE)
    graph = graph if graph is not None else ConceptGraph()
    total = total or len(chunks)
    failed = 0
    for n, (lo, hi) in enumerate(chunks):
        index = first_index + n
        chunk, at = text[lo:hi], (index + 1, total)
        if not graph.nodes:
            state = EMPTY
        elif state_nodes is None and window is not None:
            bare, _ = prompts.build(question, EMPTY, chunk, *at, budgets=llm.budgets)
            room = window - max_tokens - prompt_tokens(bare) - MARGIN
            state = fitted_state(graph, room)
        else:
            state = graph.state_json(state_nodes)
        messages, model = prompts.build(question, state, chunk, *at, budgets=llm.budgets)
        repairs = Salvage()
        try:
            reply = await llm.structured(
                messages, model, stage=prompts.BUILD_STAGE, max_tokens=max_tokens, repairs=repairs
            )
        except LLMError as exc:
            logger.warning("build call for chunk %d failed: %s", index + 1, exc)
            failed += 1
            if errors is not None:
                errors.append(f"chunk {index + 1}: {type(exc).__name__}: {exc}")
            graph.chunks = max(graph.chunks, index + 1)
            continue
        assert isinstance(reply, prompts.Operations)
        for reason, n in repairs.reasons.items():  # dropped before they could be applied
            graph.rejected[f"reply_{reason}"] += n
        for op in reply.operations:
            graph.apply(
                op.model_dump(exclude_none=True), text, index, lo, hi, require_span=require_span
            )
        graph.chunks = max(graph.chunks, index + 1)
    return graph, failed
