"""What an agent framework's adapter adds over the memstrata verb it calls.

For each adapter and transport (in process, and over REST to a ``memstrata serve``
child), the same items are written, read and searched twice, alternately: through the
adapter (for LangGraph a ``put``, ``get``, ``search``) and through the bare client verb
it maps to (``add`` with the value in the metadata, ``get``, ``search``), each in a
namespace of its own holding the same items. The overhead is the difference of the
medians. Each adapter is a :class:`Probe` in :data:`PROBES`; an interface without a read
by key (a retriever) has no ``get`` row. A LangGraph search with a query also reads every
item of the namespace (a filter may keep any of them): that is part of what it costs, and
part of the figure.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from memstrata.eval.bench_serve import Server, summary
from memstrata.facade import Memory

PEOPLE = ["Ana", "Ben", "Chloé", "Dmitri", "Eun-ji", "Farah", "Goran", "Hiro"]
DOINGS = ["cooks", "paints", "repairs", "collects", "photographs", "sells", "studies"]
THINGS = ["bicycles", "old maps", "ramen", "violins", "orchids", "chess sets", "kites"]
DAYS = ["on Mondays", "every weekend", "in the evenings", "since March", "with friends"]
#: the namespace of the bare verbs' items
BARE = "bench.b"


def items(n: int) -> list[tuple[str, dict[str, Any]]]:
    """``n`` distinct small values, the same every run."""
    out = []
    for i in range(n):
        text = (
            f"{PEOPLE[i % 8]} {DOINGS[i % 7]} {THINGS[(i // 7) % 7]} {DAYS[(i // 49) % 5]} "
            f"(note {i})"
        )
        out.append((f"k{i:05d}", {"text": text, "n": i, "tags": [PEOPLE[i % 8]]}))
    return out


@dataclass
class Probe:
    """One adapter's calls, each the counterpart of a bare verb.

    ``put(key, value)`` writes one item (its text is ``value["text"]``); ``get(key)``
    reads it back (None: the interface has no read by key); ``search(query)`` recalls
    up to 10 items."""

    put: Callable[[str, dict[str, Any]], Any]
    search: Callable[[str], Any]
    get: Callable[[str], Any] | None = None
    #: the text the adapter stores for a value, which the bare ``add`` stores too
    text: Callable[[dict[str, Any]], str] = lambda value: str(value["text"])
    #: called untimed with every text and query the probe will be given: work the
    #: framework does before it calls the adapter (CrewAI embeds them)
    prepare: Callable[[list[str]], Any] | None = None


def _langgraph(client: Any) -> Probe:
    from memstrata.integrations.langgraph import MemstrataStore, text_of

    store = MemstrataStore(client)
    return Probe(
        put=partial(store.put, ("bench", "a")),
        get=partial(store.get, ("bench", "a")),
        search=lambda q: store.search(("bench", "a"), query=q, limit=10),
        text=lambda value: text_of(value, ["$"]),
    )


def _langchain(client: Any) -> Probe:
    from langchain_core.messages import HumanMessage

    from memstrata.integrations.langchain import MemstrataChatMessageHistory, MemstrataRetriever

    history = MemstrataChatMessageHistory(client, session_id="s", namespace="bench.a")
    retriever = MemstrataRetriever(memory=client, namespace="bench.a", k=10)
    return Probe(
        put=lambda key, value: history.add_messages([HumanMessage(value["text"], id=key)]),
        search=retriever.invoke,
    )


def _llamaindex(client: Any) -> Probe:
    from llama_index.core.async_utils import asyncio_run
    from llama_index.core.llms import ChatMessage

    from memstrata.integrations.llamaindex import MemstrataMemoryBlock

    # the memory block's two calls, as LlamaIndex's Memory makes them (its sync methods
    # run them through asyncio_run): a flushed message stored, the latest one recalled
    block = MemstrataMemoryBlock(memory=client, namespace="bench.a", similarity_top_k=10)
    return Probe(
        put=lambda key, value: asyncio_run(
            block.aput([ChatMessage(role="user", content=value["text"])], session_id="s")
        ),
        search=lambda q: asyncio_run(block.aget([ChatMessage(role="user", content=q)])),
    )


def _on_a_loop() -> Callable[[Any], Any]:
    """How a probe of an async interface calls it: on one event loop of its own."""
    loop = asyncio.new_event_loop()
    return loop.run_until_complete


def _openai_agents(client: Any) -> Probe:
    from agents.tool_context import ToolContext

    from memstrata.integrations.openai_agents import MemstrataSession, recall_tool

    run = _on_a_loop()
    session = MemstrataSession("s", client, namespace="bench.a")
    tool = recall_tool(client, namespace="bench.a", k=10)

    def recall(query: str) -> Any:
        args = json.dumps({"query": query})
        ctx = ToolContext(context=None, tool_name=tool.name, tool_call_id="c", tool_arguments=args)
        return run(tool.on_invoke_tool(ctx, args))

    return Probe(
        put=lambda key, value: run(session.add_items([{"role": "user", "content": value["text"]}])),
        search=recall,
    )


def _pydantic_ai(client: Any) -> Probe:
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    from memstrata.integrations.pydantic_ai import MemstrataMemory

    run = _on_a_loop()
    memory = MemstrataMemory(client, namespace="bench.a", k=10)
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), conversation_id="s")
    return Probe(
        put=lambda key, value: run(memory.remember(ctx, value["text"])),
        search=lambda query: run(memory.recall(ctx, query)),
    )


def _autogen(client: Any) -> Probe:
    from autogen_core.memory import MemoryContent

    from memstrata.integrations.autogen import MemstrataMemory

    run, memory = _on_a_loop(), MemstrataMemory(client, namespace="bench.a", k=10)
    return Probe(
        put=lambda key, value: run(
            memory.add(MemoryContent(content=value["text"], mime_type="text/plain"))
        ),
        search=lambda q: run(memory.query(q)),
    )


def _google_adk(client: Any) -> Probe:
    from google.adk.events.event import Event
    from google.genai import types

    from memstrata.integrations.google_adk import MemstrataMemoryService

    run, service = _on_a_loop(), MemstrataMemoryService(client, k=10)

    def put(key: str, value: dict[str, Any]) -> None:
        content = types.Content(role="user", parts=[types.Part(text=value["text"])])
        said = Event(id=key, author="user", content=content)
        run(service.add_events_to_memory(app_name="bench", user_id="a", events=[said]))

    return Probe(
        put=put,
        search=lambda q: run(service.search_memory(app_name="bench", user_id="a", query=q)),
    )


#: every adapter measured, by name: a function of a memstrata client to its probe
def _crewai(client: Any) -> Probe:
    from crewai.memory.types import MemoryRecord

    from memstrata.integrations.crewai import MemstrataStorage

    storage = MemstrataStorage(client, prefix="")
    vectors: dict[str, list[float]] = {}

    def prepare(texts: list[str]) -> None:
        vectors.update(zip(texts, storage.embedder(texts), strict=True))

    def put(key: str, value: dict[str, Any]) -> None:
        text = value["text"]
        storage.save(
            [MemoryRecord(id=key, content=text, scope="/bench.a", embedding=vectors[text])]
        )

    return Probe(
        put=put,
        search=lambda q: storage.search(vectors[q], scope_prefix="/bench.a", limit=10),
        prepare=prepare,
    )


PROBES: dict[str, Callable[[Any], Probe]] = {
    "langgraph": _langgraph,
    "langchain": _langchain,
    "llamaindex": _llamaindex,
    "openai-agents": _openai_agents,
    "pydantic-ai": _pydantic_ai,
    "autogen": _autogen,
    "google-adk": _google_adk,
    "crewai": _crewai,
}
#: the adapters measured in a venv of their own (their framework does not install beside
#: the others): `make crewai-env`, then `.venv-crewai/bin/memstrata bench integrations
#: --adapter crewai`
APART = {"crewai"}


def _timed(step: Callable[[], Any]) -> float:
    start = time.perf_counter()
    step()
    return (time.perf_counter() - start) * 1000


def measure(client: Any, adapter: str, n: int, queries: int) -> dict[str, Any]:
    """The adapter's and the bare verb's latencies, alternately, for put, get, search."""
    probe = PROBES[adapter](client)
    data = items(n)
    verbs = ("put", "get", "search") if probe.get is not None else ("put", "search")
    if probe.prepare is not None:
        asked = [f"who {DOINGS[i % 7]} {THINGS[i % 7]}?" for i in range(queries)]
        probe.prepare([value["text"] + " (a)" for _, value in data] + asked)
    ms: dict[str, dict[str, list[float]]] = {v: {"adapter": [], "bare": []} for v in verbs}
    for key, value in data:
        # each path its own texts: neither reads the other's embeddings from the cache
        mine = {**value, "text": value["text"] + " (a)"}
        ms["put"]["adapter"].append(_timed(partial(probe.put, key, mine)))
        theirs = {**value, "text": value["text"] + " (b)"}
        held = {"value": theirs, "updated_at": "2026-01-01T00:00:00+00:00"}
        add = partial(
            client.add,
            probe.text(theirs),
            id=key,
            namespace=BARE,
            metadata={adapter: held},
            replace=True,
        )
        ms["put"]["bare"].append(_timed(add))
    if probe.get is not None:
        for key, _ in data[:queries]:
            ms["get"]["adapter"].append(_timed(partial(probe.get, key)))
            ms["get"]["bare"].append(_timed(partial(client.get, [key], namespace=BARE)))
    for i in range(queries):
        q = f"who {DOINGS[i % 7]} {THINGS[i % 7]}?"
        ms["search"]["adapter"].append(_timed(partial(probe.search, q)))
        bare_ask = partial(client.search, q, namespace=BARE, k=10, max_tokens=None)
        ms["search"]["bare"].append(_timed(bare_ask))
    out: dict[str, Any] = {}
    for verb, both in ms.items():
        overhead = statistics.median(both["adapter"]) - statistics.median(both["bare"])
        out[verb] = {
            "adapter": summary(both["adapter"]),
            "bare": summary(both["bare"]),
            "overhead_p50_ms": round(overhead, 2),
            "calls": len(both["adapter"]),
        }
    return out


def run(
    workdir: Path, n: int = 200, queries: int = 50, adapters: list[str] | None = None
) -> dict[str, Any]:
    """Each adapter over both transports, each on fresh stores of ``n`` items."""
    from memstrata.service.remote import RemoteMemory

    names = adapters or [a for a in PROBES if a not in APART]
    unknown = [a for a in names if a not in PROBES]
    if unknown:
        raise ValueError(f"unknown adapters {unknown}; known: {sorted(PROBES)}")
    report: dict[str, Any] = {"items": n, "queries": queries, "adapters": {}}
    for name in names:
        row: dict[str, Any] = {}
        with Memory.open(workdir / f"{name}-inproc.db") as memory:
            row["in-process"] = measure(memory, name, n, queries)
        with (
            Server(workdir / f"{name}-served.db", workdir / f"{name}-serve.log") as server,
            RemoteMemory(server.url.removesuffix("/v1")) as remote,
        ):
            row["rest"] = measure(remote, name, n, queries)
        report["adapters"][name] = row
    return report


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Each adapter over memstrata, {report['items']} items, "
        f"{report['queries']} gets and searches (ms)",
        "",
        "| adapter | transport | verb | adapter p50 | bare p50 | overhead p50 "
        "| adapter p95 | bare p95 |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in report["adapters"].items():
        for transport in ("in-process", "rest"):
            for verb, cell in row[transport].items():
                lines.append(
                    f"| {name} | {transport} | {verb} | {cell['adapter']['p50_ms']} "
                    f"| {cell['bare']['p50_ms']} | {cell['overhead_p50_ms']} "
                    f"| {cell['adapter']['p95_ms']} | {cell['bare']['p95_ms']} |"
                )
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    jpath, mpath = out_dir / "integrations.json", out_dir / "integrations.md"
    jpath.write_text(json.dumps(report, indent=2) + "\n")
    mpath.write_text(markdown(report))
    return jpath, mpath
