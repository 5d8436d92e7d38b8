"""``memstrata bench chaos``: each design's llm tier built and asked through a backend
that damages its replies, and what became of every reply and every episode.

For each design: a fresh store, a short conversation, a build at the llm tier through
:class:`~memstrata.llm.chaos.ChaosBackend` (seeded) around an inner model (the schema
filler, or the bundled GGUF), a few questions, then ``retry`` and a second build with the
faults switched off. The figures say how many replies were sent and damaged, how many
calls kept, repaired or failed, and where each episode is: built, failed (waiting for
``retry``) or lost. An episode is lost when its builder marked it built but nothing of
that builder cites it, in a design where every built episode must be cited (a MemTree
leaf, a HiGMem note), or when it is neither built, failed nor queued. Lost must be 0.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memstrata.config import Config
from memstrata.embed.base import Embedder
from memstrata.llm import LLMBackend, LLMClient
from memstrata.llm.budgets import Budgets
from memstrata.llm.chaos import ChaosBackend
from memstrata.memory import AsyncMemory
from memstrata.models import Derived

DESIGNS = ("mnemis", "personalai", "higmem", "memtree", "mindgraph")
#: designs whose every built episode must be cited by one of their records
CITES_EVERY_EPISODE = {"higmem": "turn_note", "memtree": "tree_node"}
NAMESPACE = "chaos"


async def run_design(
    recipe: str,
    turns: Sequence[dict[str, Any]],
    questions: Sequence[str],
    inner: LLMBackend,
    *,
    path: Path,
    embedder: Embedder,
    seed: int = 0,
    rate: float = 0.5,
    faults: Sequence[str] | None = None,
    max_tokens: int | None = None,
    budgets: Budgets | None = None,
) -> dict[str, Any]:
    """One design through the chaos backend; the figures as a dict (see the module).
    ``budgets``: the configured model's (default: those of ``inner``'s kind)."""
    chaos = ChaosBackend(inner, seed=seed, rate=rate, faults=faults, timeout_s=0.01)
    # Small batches, so that a design that folds a whole batch into one call (MindGraph)
    # makes several calls.
    small: dict[str, Any] = {"build.mode": "manual", "build.batch_size": 2}
    config = Config.load(recipe=recipe, namespace=NAMESPACE, **small)
    memory = await AsyncMemory.open(path, config=config, embedder=embedder)
    try:
        memory.llm = LLMClient(
            chaos, usage=memory.store, backoff=0.0, max_tokens=max_tokens, budgets=budgets
        )
        await memory.add_many(list(turns))
        reports = await memory.build(tier="llm")
        after_chaos = await _episodes(memory, recipe)
        answered = failed_answers = 0
        for question in questions:
            try:
                await memory.ask(question)
                answered += 1
            except Exception:  # an answer that fails is counted, never hidden
                failed_answers += 1
        chaos.rate = 0.0
        retried = await memory.retry()
        await memory.build(tier="llm")
        recovered = await _episodes(memory, recipe)
        usage = memory.store.llm_usage(NAMESPACE)
    finally:
        await memory.close()
    calls = {k: sum(int(row.get(k, 0)) for row in usage.values()) for k in _CALL_KEYS}
    return {
        "design": recipe,
        "replies_sent": chaos.sent,
        "faults_injected": dict(sorted(chaos.injected.items())),
        **calls,
        "stages": usage,
        "episodes": len(turns),
        "build_errors": sum(len(r.errors) for r in reports),
        "after_chaos": after_chaos,
        "answers": answered,
        "answers_failed": failed_answers,
        "retried": retried,
        "after_retry": recovered,
    }


_CALL_KEYS = ("calls", "kept", "repaired", "failures", "truncated", "rejected", "cached")


async def _episodes(memory: AsyncMemory, recipe: str) -> dict[str, int]:
    """Where each episode is for the recipe's builders: done, failed, dead, queued, and
    lost (see the module)."""
    stats = await memory.stats(NAMESPACE)
    (space,) = stats["namespaces"]
    out = {"done": 0, "failed": 0, "dead": 0, "queued": 0, "lost": 0, "records": 0}
    for name, counts in space["builds"].items():
        out["records"] += sum(space["records_by_builder"].get(name, {}).values())
        for key in ("done", "failed", "dead", "queued"):
            out[key] += int(counts.get(key, 0))
        out["lost"] += max(0, space["episodes"] - sum(counts.values()))
        kind = CITES_EVERY_EPISODE.get(name)
        if kind is not None:
            out["lost"] += len(_uncited(memory, name, kind))
    return out


def _uncited(memory: AsyncMemory, builder: str, kind: str) -> set[str]:
    """Episodes ``builder`` marked built that none of its ``kind`` records cites."""
    store = memory.store
    done = store.episodes_by_key(sorted(store.built_keys(NAMESPACE, builder)))
    records: list[Derived] = store.get_records(NAMESPACE, kind, builder=builder)
    cited = {s.episode for r in records for s in r.sources}
    return {ep.id for ep in done.values()} - cited


def conversation(turns: int) -> list[dict[str, Any]]:
    """The bundled sample conversation's first ``turns`` turns (42 at most)."""
    from importlib import resources

    data = resources.files("memstrata.data").joinpath("sample_conversation.jsonl").read_text()
    rows = [json.loads(line) for line in data.splitlines() if line.strip()]
    if not 1 <= turns <= len(rows):
        raise ValueError(f"turns must be within 1..{len(rows)}")
    return rows[:turns]


QUESTIONS = (
    "Where is Maya flying to, and why?",
    "What did Tomas ask about the conference?",
)


def totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    keys = ("replies_sent", *_CALL_KEYS, "answers", "answers_failed")
    out = {k: sum(int(r[k]) for r in rows) for k in keys}
    out["lost"] = sum(r["after_chaos"]["lost"] + r["after_retry"]["lost"] for r in rows)
    return out


def markdown(report: dict[str, Any]) -> str:
    head = (
        "| design | replies sent | faults | calls | kept | repaired | failed | items cut | "
        "items dropped | episodes | built | failed eps | lost | answers (failed) | "
        "built after retry | lost after retry |\n" + "|---" * 16 + "|\n"
    )
    lines = []
    for r in report["designs"]:
        a, b = r["after_chaos"], r["after_retry"]
        name = r["design"] + (f" (seed {r['seed']})" if "seed" in r else "")
        lines.append(
            f"| {name} | {r['replies_sent']} | {sum(r['faults_injected'].values())} | "
            f"{r['calls']} | {r['kept']} | {r['repaired']} | {r['failures']} | "
            f"{r['truncated']} | {r['rejected']} | {r['episodes']} | {a['done']} | "
            f"{a['failed'] + a['dead']} | {a['lost']} | {r['answers']} ({r['answers_failed']}) | "
            f"{b['done']} | {b['lost']} |"
        )
    faults: dict[str, int] = {}
    for r in report["designs"]:
        for k, v in r["faults_injected"].items():
            faults[k] = faults.get(k, 0) + v
    setup = report["setup"]
    return (
        f"# Chaos: {setup['inner']} inner model, rate {setup['rate']}, seed {setup['seed']}, "
        f"{setup['turns']} turns\n\n" + head + "\n".join(lines) + "\n\n"
        "Faults injected: " + ", ".join(f"{k} {v}" for k, v in sorted(faults.items())) + "\n"
    )


def write(report: dict[str, Any], folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    js, md = folder / "chaos.json", folder / "chaos.md"
    js.write_text(json.dumps(report, indent=2, default=str))
    md.write_text(markdown(report))
    return js, md
