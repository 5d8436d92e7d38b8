"""A build against an LLM server that is not there, on both stores: it stops after three
calls that cannot connect (each with its configured retries), leaves the episodes it did
not get to queued (no attempt counted), says why in its report, and a later build goes
on with them. The server is a real closed loopback port behind the OpenAI-compatible
HTTP backend; requests are counted on the wire and backoff waits on an injected sleep."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from memstrata.eval.bench_scale import synthetic_turns
from memstrata.llm import LLMClient, OpenAICompatibleBackend
from memstrata.memory import AsyncMemory
from unreachable import Counting, closed_port

NS = "t"
N = 30


def test_a_build_stops_at_an_unreachable_server_and_leaves_the_rest_queued(
    store_at: Callable[[str], str], embedder
) -> None:
    port = closed_port()
    url = f"http://127.0.0.1:{port}/v1"
    wire, waits = Counting(), []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def run() -> None:
        async with AsyncMemory.open(
            store_at("m"), embedder=embedder, **{"build.mode": "manual"}
        ) as memory:
            await memory.add_many(synthetic_turns(N), namespace=NS)
            backend = OpenAICompatibleBackend(url, "m", transport=wire)
            memory.llm = LLMClient(backend, usage=memory.store, sleep=sleep)

            (report,) = await memory.build(NS, recipe="mnemis", tier="llm")
            assert wire.requests == 9  # three calls of three attempts, then none
            assert waits == [0.5, 1.0] * 3
            assert report.unreachable is not None and report.stopped
            assert "3 calls in a row could not reach it" in report.unreachable
            assert f"cannot reach {url}/chat/completions" in report.unreachable
            # the three episodes tried failed as any failure does; the rest is untouched
            assert report.episodes == 3 and report.failed == 3
            (space,) = (await memory.stats(NS))["namespaces"]
            assert space["builds"]["mnemis"] == {"done": 0, "failed": 3, "dead": 0, "queued": 27}
            assert all(f["attempts"] == 1 for f in space["failures"])
            assert all("cannot reach" in f["error"] for f in space["failures"])

            # The same client, still refusing: a second build sends nothing and says so.
            (again,) = await memory.build(NS, recipe="mnemis", tier="llm")
            assert wire.requests == 9 and again.episodes == 0 and again.unreachable

            # Resuming: what was left is all still there to fold in.
            assert await memory.retry(NS) == 3
            (done,) = await memory.build(NS, recipe="mnemis", tier="heuristic")
            assert done.episodes == N and done.failed == 0 and done.unreachable is None

    asyncio.run(run())
