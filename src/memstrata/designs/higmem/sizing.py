"""How much of a retrieval step's material one HiGMem prompt carries: events packed into
prediction prompts, shown turns split into filter prompts, each sized to what the
model's context window leaves (or to a fixed number of characters), and one call per
prompt that falls back instead of failing the search."""

from __future__ import annotations

from pydantic import BaseModel

from memstrata.designs.higmem import prompts
from memstrata.llm.base import LLMClient
from memstrata.llm.schema import list_reply_tokens

Block = tuple[str, list[tuple[str, str]]]  # (event summary and sheet, [(short id, turn)])


def pack(blocks: list[Block], budget: int) -> list[list[Block]]:
    """Events into prediction prompts of about ``budget`` characters each, in order; an
    event longer than the budget is cut into parts, each shown with its summary."""
    calls: list[list[Block]] = []
    current: list[Block] = []
    size = 0
    for summary, turns in blocks:
        part: list[tuple[str, str]] = []
        part_size = len(summary)
        for sid, text in turns:
            if part and part_size + len(text) > budget:
                current, size = _place(calls, current, size, (summary, part), budget)
                part, part_size = [], len(summary)
            part.append((sid, text))
            part_size += len(text)
        if part:
            current, size = _place(calls, current, size, (summary, part), budget)
    if current:
        calls.append(current)
    return calls


def _place(
    calls: list[list[Block]], current: list[Block], size: int, block: Block, budget: int
) -> tuple[list[Block], int]:
    weight = len(block[0]) + sum(len(t) for _, t in block[1])
    if current and size + weight > budget:
        calls.append(current)
        current, size = [], 0
    current.append(block)
    return current, size + weight


#: characters per token when a prompt's room is counted in characters: English text runs
#: about four per token; three leaves a margin for names, dates and ids
CHARS_PER_TOKEN = 3
#: tokens a retrieval prompt's instructions, fences and ids take besides the items shown
PROMPT_TOKENS = 600
#: the least room an item list gets, however small the model (one turn at least fits)
MIN_PROMPT_CHARS = 1000


def chars(llm: LLMClient, step: str, query: str) -> int:
    """Characters of shown items one ``step`` prompt carries with ``prompt_budget``
    "model": what the model's context window leaves after the reply's room, the
    instructions and the question, at :data:`CHARS_PER_TOKEN`; the rest goes in further
    prompts."""
    budgets = llm.budgets
    room = budgets.context_tokens - budgets.tokens(prompts.STAGES[step]) - PROMPT_TOKENS
    return max(MIN_PROMPT_CHARS, room * CHARS_PER_TOKEN - len(query))


def cut(text: str, chars: int | None) -> str:
    """A turn as a prompt shows it: whole, or its first ``chars`` characters."""
    return text if chars is None else text[:chars]


def split(items: list[tuple[str, str]], budget: int | None) -> list[list[tuple[str, str]]]:
    """Shown items into prompts of at most ``budget`` characters each, in order (one
    prompt without a budget; an item longer than the budget goes alone)."""
    if budget is None or not items:
        return [items]
    parts: list[list[tuple[str, str]]] = [[]]
    size = 0
    for sid, text in items:
        weight = len(sid) + len(text) + 1
        if parts[-1] and size + weight > budget:
            parts.append([])
            size = 0
        parts[-1].append((sid, text))
        size += weight
    return parts


def room(llm: LLMClient, blocks: list[Block]) -> int:
    """The prediction's completion budget: room to name every turn shown."""
    base = llm.budgets.tokens(prompts.STAGES["predict"])
    return list_reply_tokens([sid for _, shown in blocks for sid, _ in shown], base)


async def ask(
    llm: LLMClient, prompt: tuple, step: str, max_tokens: int | None = None
) -> BaseModel | None:
    """One retrieval-stage call with the step's completion budget for the model (or
    ``max_tokens``); None when it failed (the step then falls back)."""
    messages, model = prompt
    budget = llm.budgets.tokens(prompts.STAGES[step]) if max_tokens is None else max_tokens
    try:
        return await llm.structured(messages, model, stage=prompts.STAGES[step], max_tokens=budget)
    except Exception:  # counted as a failure in the LLM accounting
        return None
