"""The MemTree ``llm`` tier with the scripted backend: one A.1.2 aggregate per ancestor,
issued together; a failing call leaves the episode failed and the tree as it was."""

from __future__ import annotations

import asyncio
import json
import re

from memtree_helpers import NS, add_episodes

from memstrata.designs.memtree.builder import MemTreeBuilder, MemTreeParams, tree_cache
from memstrata.designs.memtree.prompts import STAGE
from memstrata.designs.memtree.tree import Tree, tree_problems
from memstrata.engine.contracts import Context
from memstrata.llm import LLMClient
from memstrata.llm.fence import unfence
from memstrata.llm.scripted import ScriptedBackend
from memstrata.llm.types import Completion, MemoryUsageSink, Message
from memstrata.store import SQLiteStore

# θ = 0 at every depth: every insertion descends as deep as the tree goes.
DEEP = MemTreeParams(theta0=0.0, rate=0.0)
TEXTS = [
    "Maya booked flights to Lisbon for the conference.",
    "Maya's conference talk in Lisbon is about streaming pipelines.",
    "Maya will present sensor data pipelines at the Lisbon conference.",
    "FAIL Maya's Lisbon conference slides are due in May.",
]


class InFlight(ScriptedBackend):
    """The scripted backend, counting how many calls are open at once. With ``together``
    set to n, calls answer only once n are open: calls issued together all get in, calls
    issued one after another time out (a failure, not a hang)."""

    def __init__(self, responses) -> None:
        super().__init__(responses)
        self.open = 0
        self.peak: list[int] = []
        self.together = 1
        self._all_in: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}

    async def complete(self, messages, **kw):  # type: ignore[no-untyped-def]
        all_in = self._all_in.setdefault(asyncio.get_running_loop(), asyncio.Event())
        self.open += 1
        self.peak.append(self.open)
        if self.open >= self.together:
            all_in.set()
        try:
            await asyncio.wait_for(all_in.wait(), 30)
            return await super().complete(messages, **kw)
        finally:
            self.open -= 1


def answer(messages: list[Message]) -> str:
    user = unfence(messages[-1].content)
    if "FAIL" in user.split("[Existing Information")[0]:
        raise RuntimeError("the model is down")
    n = re.search(r"from (\d+) previous entries", user)
    return json.dumps({"summary": f"Summary of {n.group(1) if n else '?'} entries and more."})


def test_aggregates_per_ancestor_concurrently_and_failures_undone(embedder) -> None:
    store = SQLiteStore(":memory:")
    eps = add_episodes(store, TEXTS)
    backend = InFlight([answer] * 20)
    ctx = Context(store, embedder, LLMClient(backend, max_retries=0), "llm")
    builder = MemTreeBuilder(DEEP)

    assert asyncio.run(builder.update(ctx, NS, eps[:1])).failed == {}
    assert backend.requests == []  # a first leaf under the root: no ancestor to aggregate
    assert asyncio.run(builder.update(ctx, NS, eps[1:2])).failed == {}
    assert len(backend.requests) == 1  # the expanded leaf's new parent
    first = backend.requests[0].messages
    assert "from 1 previous entries" in unfence(first[-1].content)
    assert "[New Information]\n" + TEXTS[1] in unfence(first[-1].content)
    assert "more abstract" in first[0].content

    backend.peak.clear()
    backend.together = 2
    assert asyncio.run(builder.update(ctx, NS, eps[2:3])).failed == {}
    assert len(backend.requests) == 3  # two ancestors: the inner node and the expanded leaf
    assert max(backend.peak) == 2  # issued together
    backend.together = 1
    asked = {
        re.search(r"from (\d+) previous", unfence(r.messages[-1].content)).group(1)
        for r in backend.requests[1:]
    }  # type: ignore[union-attr]
    assert asked == {"1", "2"}

    tree = Tree.load(store, embedder, NS)
    before = {n: (node.content, node.depth, node.parent_id) for n, node in tree.nodes.items()}
    assert tree_problems(tree) == [] and len(tree.leaves()) == 3
    assert all(tree.nodes[n].content.startswith("Summary of") for n in tree.inner())

    # The fourth episode's calls fail: it is reported, nothing of it is written or kept.
    result = asyncio.run(builder.update(ctx, NS, eps[3:]))
    assert list(result.failed) == ["e3"] and "model is down" in result.failed["e3"]
    for held in (tree_cache(ctx).get(NS), Tree.load(store, embedder, NS)):
        assert tree_problems(held) == []
        assert {n: (x.content, x.depth, x.parent_id) for n, x in held.nodes.items()} == before
    assert [e.id for e in store.pending_episodes(NS, "memtree", 10, 0)] == ["e3"]


def test_a_failure_in_a_batch_keeps_the_others(embedder) -> None:
    store = SQLiteStore(":memory:")
    eps = add_episodes(store, TEXTS)
    ctx = Context(store, embedder, LLMClient(ScriptedBackend([answer] * 20), max_retries=0), "llm")
    result = asyncio.run(MemTreeBuilder(DEEP).update(ctx, NS, [eps[0], eps[3], eps[1]]))
    assert list(result.failed) == ["e3"]
    tree = Tree.load(store, embedder, NS)
    assert tree_problems(tree) == []
    assert sorted(tree.nodes[n].sources[0].episode for n in tree.leaves()) == ["e0", "e1"]
    assert STAGE == "memtree.aggregate"


def test_a_long_summary_is_kept_whole_and_a_cut_one_is_asked_again_with_more_room() -> None:
    """A reply the token limit stopped is never stored as if whole: it is asked again
    with twice the room, and the whole reply is stored. Cut again at the model's output
    limit (the small profile's 2,048), it is kept at its last sentence end and counted
    ``cut_off`` in the stage's stats."""
    from memstrata.designs.memtree.prompts import llm_aggregate

    long = " ".join(f"Sentence {i} of a deep node's summary about Lisbon." for i in range(60))
    assert len(long) > 3000  # the paper's deep nodes run near 800 tokens
    text = '{"summary": "Maya presents in Lisbon. She flies in May and her slides are du'
    cut = Completion(text, 10, 1024, "scripted", finish_reason="length")
    whole = "Maya presents in Lisbon. She flies in May and her slides are due on Friday."
    usage = MemoryUsageSink()
    backend = ScriptedBackend([{"summary": long}, cut, {"summary": whole}, cut, cut])
    llm = LLMClient(backend, max_retries=0, usage=usage)
    assert llm.budgets.profile == "small" and llm.budgets.max_output_tokens == 2048

    assert asyncio.run(llm_aggregate(llm, "old", "new", 3)) == long
    assert backend.requests[0].max_tokens == llm.budgets.tokens(STAGE) == 1024 >= 800

    assert asyncio.run(llm_aggregate(llm, "old", "new", 3)) == whole
    assert [r.max_tokens for r in backend.requests[1:]] == [1024, 2048]
    again = usage.records[1]
    assert again.attempts == 2 and again.outcome == "repaired" and again.cut_off == 0

    assert asyncio.run(llm_aggregate(llm, "old", "new", 3)) == "Maya presents in Lisbon."
    assert [r.max_tokens for r in backend.requests[3:]] == [1024, 2048]  # 2048: the limit
    kept = usage.records[2]
    assert kept.attempts == 2 and kept.outcome == "repaired" and kept.dropped == {"cut_off": 1}
    assert usage.summary()[STAGE]["cut_off"] == 1 and backend.remaining == 0


def test_the_answer_is_the_papers_prompt_over_the_hits(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    from memstrata.designs.memtree.answer import MemTreeAnswerer
    from memstrata.retrieval.documents import episode_hit

    store = SQLiteStore(":memory:")
    eps = add_episodes(store, TEXTS[:2])
    words = "The first result names the city.\nAnswer: In Lisbon."  # prose, not JSON
    backend = ScriptedBackend([{"answer": "In Lisbon."}, {"answer": "  "}, words])
    ctx = Context(store, embedder, LLMClient(backend, max_retries=0), "llm")
    hits = [episode_hit(ep, 1.0) for ep in eps]
    got = asyncio.run(MemTreeAnswerer().answer(ctx, NS, "Where is the conference?", hits))
    assert got.text == "In Lisbon." and not got.abstained
    assert got.sources == [eps[0].id, eps[1].id]
    user = unfence(backend.requests[0].messages[-1].content)
    assert "Write a high-quality short answer for the given question using only the" in user
    assert "[ Question ]\nWhere is the conference?" in user
    assert TEXTS[0] in user and TEXTS[1] in user and "[ Output ]" in user
    empty = asyncio.run(MemTreeAnswerer().answer(ctx, NS, "Where?", hits))
    assert empty.abstained and empty.sources == []
    said = asyncio.run(MemTreeAnswerer().answer(ctx, NS, "Where is the conference?", hits))
    assert said.text == "In Lisbon." and said.sources == got.sources


def test_a_chat_model_gets_its_own_budgets(embedder) -> None:  # type: ignore[no-untyped-def]
    """The aggregate and the answer ask with the model's budgets: the bundled model's
    (1,024 and 200 tokens) or a chat model's (4,096 and 1,024), the summary's guard with
    them; an answer budget set in the recipe wins."""
    from memstrata.designs.memtree.answer import MemTreeAnswerer, MemTreeAnswerParams
    from memstrata.designs.memtree.prompts import ANSWER_STAGE, llm_aggregate
    from memstrata.llm.budgets import Budgets
    from memstrata.llm.salvage import shorten
    from memstrata.retrieval.documents import episode_hit

    store = SQLiteStore(":memory:")
    hits = [episode_hit(ep, 1.0) for ep in add_episodes(store, TEXTS[:1])]
    long = "Maya flies to Lisbon in May. " * 350  # 10,150 characters
    chat = Budgets.of("chat")
    for budgets, aggregate, answered, kept in ((None, 1024, 200, 8000), (chat, 4096, 1024, None)):
        backend = ScriptedBackend([{"summary": long}, {"answer": "A."}, {"answer": "A."}])
        llm = LLMClient(backend, max_retries=0, budgets=budgets)
        summary = asyncio.run(llm_aggregate(llm, "old", "new", 1))
        assert summary == (long if kept is None else shorten(long, kept)).strip()
        ctx = Context(store, embedder, llm, "llm")
        asyncio.run(MemTreeAnswerer().answer(ctx, NS, "Where?", hits))
        asyncio.run(MemTreeAnswerer(MemTreeAnswerParams(max_tokens=64)).answer(ctx, NS, "?", hits))
        assert [r.max_tokens for r in backend.requests] == [aggregate, answered, 64]
        assert llm.budgets.tokens(ANSWER_STAGE) == answered
