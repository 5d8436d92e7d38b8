"""``memstrata bench longturn``: warm search latency and recall on a chat of long turns.

Long user/assistant turns (about 2,800 characters each, 188 of them by default) are what
an assistant's own memory holds, and they stress structure-building recipes differently
from short LoCoMo turns: every turn mentions dozens of names and phrases, so an entity
graph grows to thousands of nodes. The chat is generated from word lists and invented
names with a fixed seed (nothing is downloaded). Each question is planted: one sentence
in one turn states a fact no other turn states, and the question asks for it, so the
turn holding that sentence is the evidence.

Timings: every recipe is built first, then each query is searched alone (models loaded,
indexes warm after one untimed pass); p50 and p95 per recipe. ``--profile`` adds a
cProfile of one recipe over the same queries, in a separate pass.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import random
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest.mock import patch

from memstrata.eval.bench_scale import ADJS, OBJECTS, VERBS
from memstrata.eval.metrics import distinct_sources, percentile, recall_precision
from memstrata.eval.report import write_report
from memstrata.memory import AsyncMemory

SYLLABLES = "ka ro mi tan vel sor lin dra pe quo zu bar ne fis hal mor tey gri ul den".split()
TOPICS = """
sourdough baking, the trail map, a used kayak, the spreadsheet formula, the rent increase,
a chess opening, the vegetable patch, a job interview, the wedding playlist, the tax form,
a broken dishwasher, the language course, a hiking boot, the piano recital, a podcast idea,
the school fundraiser, a camping stove, the insurance claim, the family reunion, a telescope
""".split(",")
ASSISTANT = (
    "That is a good question about {topic}. The {adj} part is usually the {obj}, so start "
    "there and keep notes. Many people in {place} find that the {obj2} helps as well. ",
    "Here is a plan for {topic}: first check the {obj}, then compare it with the {obj2}. "
    "If {name} already tried it, ask what felt {adj}. ",
    "You mentioned {topic} before. A {adj} approach is to set aside an hour each week, "
    "review the {obj} and write down what changed since the {obj2} in {place}. ",
)
USER = (
    "I have been thinking about {topic} again. My {obj} was {adj} this week and {name} "
    "said the {obj2} in {place} is better. ",
    "So yesterday {name} and I went to {place} to look at the {obj}. It was {adj}, "
    "honestly, and the {obj2} was sold out. ",
    "Quick update on {topic}: I {verb} the {obj} with {name}, and now I need a {adj} {obj2}. ",
)
TURN_CHARS = 2_800


def _name(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()


def long_chat(
    n_turns: int = 188, n_questions: int = 60, seed: int = 5
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Turns (import items) and questions with their evidence turn's id."""
    rng = random.Random(seed)
    people = sorted({_name(rng) for _ in range(400)})
    places = sorted(
        {_name(rng) + " " + rng.choice(["Bay", "Hill", "Park", "Street"]) for _ in range(300)}
    )
    planted: dict[int, list[str]] = {}
    questions: list[tuple[str, str]] = []
    used: set[tuple[str, str]] = set()
    while len(questions) < n_questions:
        turn = rng.randrange(n_turns)
        who, obj, where = rng.choice(people), rng.choice(OBJECTS), rng.choice(places)
        if (who, obj) in used:
            continue
        used.add((who, obj))
        verb = rng.choice(VERBS)
        planted.setdefault(turn, []).append(f"{who} {verb} the {obj} at {where}. ")
        questions.append((f"Where did {who} {verb} the {obj}?", f"t{turn}"))
    start = datetime(2024, 3, 1, tzinfo=UTC)
    turns = []
    for i in range(n_turns):
        user = i % 2 == 0
        forms = USER if user else ASSISTANT
        parts = list(planted.get(i, []))
        while sum(map(len, parts)) < TURN_CHARS:
            parts.append(
                rng.choice(forms).format(
                    topic=rng.choice(TOPICS).strip(),
                    adj=rng.choice(ADJS),
                    obj=rng.choice(OBJECTS),
                    obj2=rng.choice(OBJECTS),
                    place=rng.choice(places),
                    name=rng.choice(people),
                    verb=rng.choice(VERBS),
                )
            )
        rng.shuffle(parts)
        turns.append(
            {
                "id": f"t{i}",
                "text": "".join(parts).strip(),
                "speaker": "user" if user else "assistant",
                "session": f"s{i // 20}",
                "occurred_at": start + timedelta(hours=6 * i),
            }
        )
    return turns, questions


async def _run(
    path: str, recipes: list[str], n_turns: int, n_questions: int, profile: str | None
) -> dict[str, Any]:
    memory = await AsyncMemory.open(path)
    ns = "longturn"
    try:
        turns, questions = long_chat(n_turns, n_questions)
        await memory.add_many(turns, namespace=ns)
        report: dict[str, Any] = {
            "turns": n_turns,
            "chars_per_turn": round(statistics.mean(len(t["text"]) for t in turns)),
            "questions": n_questions,
            "recipes": {},
        }
        texts = [q for q, _ in questions]
        for recipe in recipes:
            t0 = time.perf_counter()
            builds = await memory.build(ns, recipe=recipe)
            build_s = time.perf_counter() - t0
            k = memory.engine.recipe(recipe).fusion.total(10)  # each kind 10 deep
            await memory.search_many(texts, namespace=ns, k=k, recipe=recipe, max_tokens=None)
            ms, recalls = [], []
            for q, evidence in questions:
                t = time.perf_counter()
                r = await memory.search(q, namespace=ns, k=k, recipe=recipe, max_tokens=None)
                ms.append(1000 * (time.perf_counter() - t))
                ranked = distinct_sources(h.sources for h in r.hits)
                recalls.append(recall_precision(ranked, [evidence], 10)[0])
            entry: dict[str, Any] = {
                "build_seconds": round(build_s, 2),
                "counts": {k: v for b in builds for k, v in b.counts.items()},
                "p50_ms": round(statistics.median(ms), 1),
                "p95_ms": round(percentile(ms, 0.95), 1),
                "R@10": round(statistics.mean(recalls), 4),
            }
            if recipe == profile:
                entry["profile"] = await _profile(memory, ns, recipe, texts)
            report["recipes"][recipe] = entry
        return report
    finally:
        await memory.close()


async def _profile(memory: AsyncMemory, ns: str, recipe: str, queries: list[str]) -> str:
    """cProfile of one pass over ``queries``, apart from the timed pass. Work a search
    hands to threads runs inline here, so the profile sees it rather than a wait."""

    async def inline(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    prof = cProfile.Profile()
    with patch("asyncio.to_thread", inline):
        prof.enable()
        for q in queries:
            await memory.search(q, namespace=ns, k=10, recipe=recipe, max_tokens=None)
        prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(20)
    return buf.getvalue()


def run(
    path: str,
    recipes: list[str],
    n_turns: int = 188,
    n_questions: int = 60,
    profile: str | None = None,
) -> dict[str, Any]:
    import asyncio

    return asyncio.run(_run(path, recipes, n_turns, n_questions, profile))


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Long turns: {report['turns']} turns of about {report['chars_per_turn']} characters, "
        f"{report['questions']} planted questions; warm search, k = 10.",
        "",
        "| recipe | build s | p50 ms | p95 ms | R@10 | records |",
        "|---|---|---|---|---|---|",
    ]
    for name, e in report["recipes"].items():
        counts = ", ".join(f"{k} {v}" for k, v in e["counts"].items())
        lines.append(
            f"| {name} | {e['build_seconds']} | {e['p50_ms']} | {e['p95_ms']} | {e['R@10']:.3f} "
            f"| {counts} |"
        )
    for name, e in report["recipes"].items():
        if "profile" in e:
            lines += ["", f"cProfile of `{name}` (own time):", "```", e["profile"], "```"]
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, "longturn", markdown)
