"""What an agent framework's adapter adds over the memstrata verb it calls.

For each transport (in process, and over REST to a ``memstrata serve`` child), the same
items are written, read and searched twice, alternately: through the adapter (a LangGraph
``put``, ``get``, ``search``) and through the bare client verb it maps to (``add`` with
the value in the metadata, ``get``, ``search``), each in a namespace of its own holding
the same items. The overhead is the difference of the medians. A LangGraph search with
a query also reads every item of the namespace (a filter may keep any of them): that is
part of what it costs, and part of the figure.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from memstrata.eval.bench_serve import Server, summary
from memstrata.facade import Memory

PEOPLE = ["Ana", "Ben", "Chloé", "Dmitri", "Eun-ji", "Farah", "Goran", "Hiro"]
DOINGS = ["cooks", "paints", "repairs", "collects", "photographs", "sells", "studies"]
THINGS = ["bicycles", "old maps", "ramen", "violins", "orchids", "chess sets", "kites"]
DAYS = ["on Mondays", "every weekend", "in the evenings", "since March", "with friends"]


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


def _timed(step: Callable[[], Any]) -> float:
    start = time.perf_counter()
    step()
    return (time.perf_counter() - start) * 1000


def measure(client: Any, n: int, queries: int) -> dict[str, Any]:
    """The adapter's and the bare verb's latencies, alternately, for put, get, search."""
    from memstrata.integrations.langgraph import FIELD, MemstrataStore, text_of

    store = MemstrataStore(client)
    data = items(n)
    ms: dict[str, dict[str, list[float]]] = {
        v: {"adapter": [], "bare": []} for v in ("put", "get", "search")
    }
    for key, value in data:
        # each path its own texts: neither reads the other's embeddings from the cache
        mine = {**value, "text": value["text"] + " (a)"}
        ms["put"]["adapter"].append(_timed(partial(store.put, ("bench", "a"), key, mine)))
        theirs = {**value, "text": value["text"] + " (b)"}
        held = {FIELD: {"value": theirs, "updated_at": "2026-01-01T00:00:00+00:00"}}
        text = text_of(theirs, ["$"])
        add = partial(client.add, text, id=key, namespace="bench.b", metadata=held, replace=True)
        ms["put"]["bare"].append(_timed(add))
    for key, _ in data[:queries]:
        ms["get"]["adapter"].append(_timed(partial(store.get, ("bench", "a"), key)))
        ms["get"]["bare"].append(_timed(partial(client.get, [key], namespace="bench.b")))
    for i in range(queries):
        q = f"who {DOINGS[i % 7]} {THINGS[i % 7]}?"
        ask = partial(store.search, ("bench", "a"), query=q, limit=10)
        ms["search"]["adapter"].append(_timed(ask))
        bare_ask = partial(client.search, q, namespace="bench.b", k=10, max_tokens=None)
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


def run(workdir: Path, n: int = 200, queries: int = 50) -> dict[str, Any]:
    """Both transports on fresh stores of ``n`` items."""
    from memstrata.service.remote import RemoteMemory

    report: dict[str, Any] = {"items": n, "queries": queries, "adapter": "langgraph"}
    with Memory.open(workdir / "inproc.db") as memory:
        report["in-process"] = measure(memory, n, queries)
    with (
        Server(workdir / "served.db", workdir / "serve.log") as server,
        RemoteMemory(server.url.removesuffix("/v1")) as remote,
    ):
        report["rest"] = measure(remote, n, queries)
    return report


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"LangGraph store over memstrata, {report['items']} items, "
        f"{report['queries']} gets and searches (ms)",
        "",
        "| transport | verb | adapter p50 | bare p50 | overhead p50 | adapter p95 | bare p95 |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for transport in ("in-process", "rest"):
        for verb, row in report[transport].items():
            lines.append(
                f"| {transport} | {verb} | {row['adapter']['p50_ms']} | {row['bare']['p50_ms']} "
                f"| {row['overhead_p50_ms']} | {row['adapter']['p95_ms']} "
                f"| {row['bare']['p95_ms']} |"
            )
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    jpath, mpath = out_dir / "integrations.json", out_dir / "integrations.md"
    jpath.write_text(json.dumps(report, indent=2) + "\n")
    mpath.write_text(markdown(report))
    return jpath, mpath
