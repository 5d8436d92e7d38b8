"""``memstrata bench build``: what building a recipe's structures costs, on a LoCoMo slice.

One conversation of a LoCoMo file, into a fresh store (builds in ``manual`` mode, so
each step is timed on its own):

1. the first ``turns`` turns are imported, then built with the chosen tier (timed);
2. every builder's invariants are checked on the result (``Builder.check``);
3. the next ``inserts`` turns are added one at a time, each followed by an incremental
   build, and both steps are timed: ``add`` alone is the baseline of the same run, so
   ``build`` is what the structures add to one episode's insert;
4. the invariants are checked again.

For the ``llm`` tier the report gives, per stage, the LLM calls and the prompt and
completion tokens per imported turn (read back from the store's accounting). For the
``mnemis`` recipe the paper's reference is about 8,900 prompt tokens per LoCoMo turn for
the base graph and the hierarchy together.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memstrata.engine import BuildReport
from memstrata.eval.metrics import percentile
from memstrata.eval.report import write_report
from memstrata.importers import locomo
from memstrata.memory import AsyncMemory


def _p50_p95(ms: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(ms), 1), "p95": round(percentile(ms, 0.95), 1)}


async def _problems(memory: AsyncMemory, namespace: str, recipe: str) -> list[str]:
    ctx = memory.engine.context(namespace, "heuristic")
    out = []
    for builder in memory.engine.builders(recipe):
        out += [f"{builder.name}: {p}" for p in await builder.check(ctx, namespace)]
    return out


def _summary(builds: list[BuildReport]) -> dict[str, Any]:
    return {
        "seconds": round(sum(b.seconds for b in builds), 3),
        "episodes": max((b.episodes for b in builds), default=0),
        "failed_episodes": sum(b.failed for b in builds),
        "failed_llm_calls": sum(b.llm_failures for b in builds),
        "errors": [e for b in builds for e in b.errors][:5],
        "builders": {b.builder: {**b.counts, **b.details} for b in builds},
    }


async def run(
    memory: AsyncMemory,
    data_path: str | Path,
    *,
    recipe: str,
    conversation: str = "conv-26",
    turns: int = 60,
    inserts: int = 0,
    tier: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    if not memory.engine.builders(recipe):
        raise ValueError(f"recipe {recipe!r} builds nothing; choose one with builders")
    convs = {c.namespace: c for c in locomo.load(data_path)}
    if conversation not in convs:
        raise ValueError(f"no conversation {conversation!r} in {data_path}; have {sorted(convs)}")
    conv = convs[conversation]
    if turns < 1 or turns + inserts > len(conv.turns):
        raise ValueError(
            f"{conversation} has {len(conv.turns)} turns; asked for {turns} + {inserts} inserts"
        )
    ns = conv.namespace
    await memory.add_many(conv.turns[:turns], namespace=ns)
    builds = await memory.build(ns, recipe=recipe, tier=tier, progress=progress)
    usage = {k: v for b in builds for k, v in b.llm.items()}
    stages = {
        stage: {
            "calls": u["calls"],
            "failures": u["failures"],
            "prompt_tokens": u["prompt_tokens"],
            "completion_tokens": u["completion_tokens"],
            "calls_per_turn": round(u["calls"] / turns, 2),
            "prompt_tokens_per_turn": round(u["prompt_tokens"] / turns, 1),
            "completion_tokens_per_turn": round(u["completion_tokens"] / turns, 1),
            "seconds": round(u["latency_ms"] / 1000, 1),
        }
        for stage, u in sorted(usage.items())
    }
    llm = memory.llm
    report: dict[str, Any] = {
        "data": str(data_path),
        "conversation": ns,
        "turns": turns,
        "recipe": recipe,
        "tier": builds[0].tier,
        "llm": (
            f"{llm.backend.name}:{llm.backend.model}" if llm and builds[0].tier == "llm" else None
        ),
        "build": _summary(builds),
        "llm_stages": stages,
        "per_turn": {
            "calls": round(sum(s["calls"] for s in stages.values()) / turns, 2),
            "prompt_tokens": round(sum(s["prompt_tokens"] for s in stages.values()) / turns, 1),
            "completion_tokens": round(
                sum(s["completion_tokens"] for s in stages.values()) / turns, 1
            ),
        },
        "problems": await _problems(memory, ns, recipe),
    }
    if inserts:
        add_ms: list[float] = []
        build_ms: list[float] = []
        for turn in conv.turns[turns : turns + inserts]:
            t0 = time.perf_counter()
            await memory.add(
                turn["text"], **{k: v for k, v in turn.items() if k != "text"}, namespace=ns
            )
            t1 = time.perf_counter()
            await memory.build(ns, recipe=recipe, tier=tier)
            t2 = time.perf_counter()
            add_ms.append(1000 * (t1 - t0))
            build_ms.append(1000 * (t2 - t1))
        total = [a + b for a, b in zip(add_ms, build_ms, strict=True)]
        report["inserts"] = {
            "n": inserts,
            "add_ms": _p50_p95(add_ms),
            "build_ms": _p50_p95(build_ms),
            "add_and_build_ms": _p50_p95(total),
            "problems": await _problems(memory, ns, recipe),
        }
    return report


def _rules(problems: list[str]) -> str:
    return "all hold" if not problems else "; ".join(problems)


def _row(*cells: Any) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown(report: dict[str, Any]) -> str:
    b = report["build"]
    lines = [
        f"# Build of `{report['recipe']}`: {report['conversation']}, first "
        f"{report['turns']} turns, tier {report['tier']}"
        + (f" ({report['llm']})" if report["llm"] else ""),
        "",
        f"- build: {b['seconds']} s",
        *(f"- {name}: {figures}" for name, figures in b["builders"].items()),
        f"- failed episodes: {b['failed_episodes']}; failed LLM calls: {b['failed_llm_calls']}",
        f"- invariants: {_rules(report['problems'])}",
    ]
    if report["llm_stages"]:
        pt = report["per_turn"]
        lines += [
            "",
            "| stage | calls | failures | calls/turn | prompt tok/turn | completion tok/turn | s |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for stage, s in report["llm_stages"].items():
            lines.append(
                _row(
                    stage,
                    s["calls"],
                    s["failures"],
                    s["calls_per_turn"],
                    s["prompt_tokens_per_turn"],
                    s["completion_tokens_per_turn"],
                    s["seconds"],
                )
            )
        lines += [
            _row("**all**", "", "", pt["calls"], pt["prompt_tokens"], pt["completion_tokens"], ""),
            "",
            f"Prompt tokens per turn: {pt['prompt_tokens']}.",
        ]
    ins = report.get("inserts")
    if ins:
        lines += [
            "",
            f"## {ins['n']} single-episode inserts, each followed by an incremental build",
            "",
            "| step | p50 ms | p95 ms |",
            "|---|---:|---:|",
            _row("add (baseline)", ins["add_ms"]["p50"], ins["add_ms"]["p95"]),
            _row("build", ins["build_ms"]["p50"], ins["build_ms"]["p95"]),
            _row("add + build", ins["add_and_build_ms"]["p50"], ins["add_and_build_ms"]["p95"]),
            "",
            f"Invariants after the inserts: {_rules(ins['problems'])}",
        ]
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, f"build-{report['recipe']}", markdown)
