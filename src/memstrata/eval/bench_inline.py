"""``memstrata bench inline``: what keeping a recipe's structures current on ``add`` costs.

Two measurements, each beside its baseline from the same run, on fresh stores:

1. **bulk**: one whole conversation through ``add_many`` with ``build.mode = inline``
   (the builders run inside the call), against ``add_many`` in ``manual`` mode followed
   by a separate ``build``. The ratio is inline / (add_many + build).
2. **single adds on a large namespace**: a namespace is filled to ``size`` episodes
   (inline, so its structures are current), then ``adds`` further episodes are added one
   by one; each ``add`` is timed with the builders running inline, and, as the baseline,
   the same number of ``add`` calls in ``manual`` mode on the same namespace.

The large namespace is made from the file's turns, cycled: round *r* gives every turn a
new id, its own sessions, and the speakers' first names replaced by names of round *r*
(in the speaker field and in the text), so that later rounds add new people rather than
repeat the first ones exactly. Topics still repeat; the report gives the record counts
so the size of the structures is visible.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from memstrata.config import Config
from memstrata.eval.metrics import percentile
from memstrata.eval.report import write_report
from memstrata.importers import locomo
from memstrata.memory import AsyncMemory

NAMES = """Ada Bruno Chiara Dmitri Elif Farid Greta Hiro Ines Jonas Kofi Lena Mateo Nadia Omar
Priya Quentin Rosa Sven Tara Umar Vera Wen Ximena Yusuf Zoe""".split()


def _ms(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(values), 1),
        "p95": round(percentile(values, 0.95), 1),
        "n": len(values),
    }


def synthetic_turns(convs: list[locomo.Conversation], n: int) -> list[dict[str, Any]]:
    """``n`` turns cycled from ``convs``, renamed per round (see the module docstring)."""
    base = [
        {**t, "id": f"{c.namespace}:{t['id']}", "session": f"{c.namespace}:{t.get('session')}"}
        for c in convs
        for t in c.turns
    ]
    if not base:
        raise ValueError("the file has no turns")
    speakers = sorted({str(t["speaker"]) for t in base if t.get("speaker")})
    out: list[dict[str, Any]] = []
    rnd = 0
    while len(out) < n:
        rename = (
            {
                s: f"{NAMES[(i + rnd) % len(NAMES)]}{'' if rnd == 0 else rnd}"
                for i, s in enumerate(speakers)
            }
            if rnd
            else {}
        )
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, rename)) + r")\b") if rename else None
        for t in base:
            if len(out) >= n:
                break
            text = str(t["text"])
            if pattern is not None:
                text = pattern.sub(partial(_renamed, rename), text)
            out.append(
                {
                    **t,
                    "id": f"r{rnd}:{t['id']}",
                    "text": text or "(no text)",
                    "speaker": rename.get(t.get("speaker") or "", t.get("speaker")),
                    "session": f"r{rnd}:{t.get('session')}",
                }
            )
        rnd += 1
    return out


def _renamed(names: dict[str, str], match: re.Match[str]) -> str:
    return names[match.group(1)]


async def _open(path: str, cfg: Config, recipe: str, mode: str) -> AsyncMemory:
    return await AsyncMemory.open(
        path, config=cfg.with_overrides(recipe=recipe, **{"build.mode": mode})
    )


async def run(
    data_path: str | Path,
    folder: str | Path,
    cfg: Config,
    *,
    recipe: str,
    conversation: str | None = None,
    size: int = 5000,
    adds: int = 100,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    convs = locomo.load(data_path)
    if not convs:
        raise ValueError(f"{data_path} has no conversations")
    conv = (
        next((c for c in convs if c.namespace == conversation), None) if conversation else convs[0]
    )
    if conv is None:
        raise ValueError(f"no conversation {conversation!r} in {data_path}")
    folder = Path(folder)
    report: dict[str, Any] = {"data": str(data_path), "recipe": recipe, "tier": "heuristic"}

    # 1. bulk: inline add_many vs add_many + build, each on a fresh store
    mem = await _open(str(folder / "bulk-manual.db"), cfg, recipe, "manual")
    try:
        t0 = time.perf_counter()
        await mem.add_many(conv.turns, namespace=conv.namespace)
        t1 = time.perf_counter()
        await mem.build(conv.namespace, recipe=recipe)
        t2 = time.perf_counter()
    finally:
        await mem.close()
    mem = await _open(str(folder / "bulk-inline.db"), cfg, recipe, "inline")
    try:
        t3 = time.perf_counter()
        await mem.add_many(conv.turns, namespace=conv.namespace)
        t4 = time.perf_counter()
        records = (await mem.stats(conv.namespace))["namespaces"][0]["records"]
    finally:
        await mem.close()
    report["bulk"] = {
        "conversation": conv.namespace,
        "turns": len(conv.turns),
        "add_many_s": round(t1 - t0, 2),
        "build_s": round(t2 - t1, 2),
        "add_many_inline_s": round(t4 - t3, 2),
        "ratio": round((t4 - t3) / max(1e-9, t2 - t0), 2),
        "records": records,
    }

    # 2. single adds on a namespace of `size` episodes
    turns = synthetic_turns(convs, size + 2 * adds)
    ns = "large"
    path = str(folder / "large.db")
    mem = await _open(path, cfg, recipe, "inline")
    try:
        t0 = time.perf_counter()
        await mem.add_many(turns[:size], namespace=ns, progress=progress)
        fill_s = time.perf_counter() - t0
        inline_ms = []
        for t in turns[size : size + adds]:
            t1 = time.perf_counter()
            await mem.add(t["text"], **{k: v for k, v in t.items() if k != "text"}, namespace=ns)
            inline_ms.append(1000 * (time.perf_counter() - t1))
        stats = (await mem.stats(ns))["namespaces"][0]
        if stats["episodes"] != size + adds:
            raise ValueError(f"the namespace holds {stats['episodes']} episodes, not {size + adds}")
    finally:
        await mem.close()
    mem = await _open(path, cfg, recipe, "manual")
    try:
        manual_ms = []
        for t in turns[size + adds : size + 2 * adds]:
            t1 = time.perf_counter()
            await mem.add(t["text"], **{k: v for k, v in t.items() if k != "text"}, namespace=ns)
            manual_ms.append(1000 * (time.perf_counter() - t1))
    finally:
        await mem.close()
    report["single"] = {
        "namespace_episodes": size,
        "fill_inline_s": round(fill_s, 1),
        "records": stats["records"],
        "add_inline_ms": _ms(inline_ms),
        "add_manual_ms": _ms(manual_ms),
    }
    return report


def markdown(report: dict[str, Any]) -> str:
    b, s = report["bulk"], report["single"]
    return "\n".join(
        [
            f"# Inline builds of `{report['recipe']}` ({report['tier']} tier), {report['data']}",
            "",
            f"Bulk, {b['conversation']} ({b['turns']} turns, records {b['records']}):",
            "",
            "| step | seconds |",
            "|---|---:|",
            f"| add_many (manual) | {b['add_many_s']} |",
            f"| build | {b['build_s']} |",
            f"| add_many (inline) | {b['add_many_inline_s']} |",
            f"| ratio inline / (add_many + build) | {b['ratio']} |",
            "",
            f"Single adds on a namespace of {s['namespace_episodes']} episodes (filled inline "
            f"in {s['fill_inline_s']} s; records {s['records']}):",
            "",
            "| add | p50 ms | p95 ms | n |",
            "|---|---:|---:|---:|",
            f"| inline (builders run) | {s['add_inline_ms']['p50']} | "
            f"{s['add_inline_ms']['p95']} | {s['add_inline_ms']['n']} |",
            f"| manual (baseline) | {s['add_manual_ms']['p50']} | "
            f"{s['add_manual_ms']['p95']} | {s['add_manual_ms']['n']} |",
            "",
        ]
    )


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, f"inline-{report['recipe']}", markdown)
