"""How much System-2 *could* add to Mnemis's Recall@10, on a LoCoMo file::

    python -m studies.mnemis_system2.ceiling FILE [--recipe mnemis,...] [--config C]
        [--db PATH] [--out DIR]


The System-2 ablation (``mnemis`` against ``mnemis-no-s2`` in ``bench locomo``) measures
what the fusion makes of Global Selection. This benchmark separates the two parts:

* **selection**: the episodes Global Selection reaches for each question (heuristic tier,
  the recipe's own ``selection`` parameters), and how many there are;
* **ceiling**: Recall@10 of System-1 alone (``mnemis-no-s2``) when a perfect reranker
  moves every evidence episode System-2 reached into the top 10. No reranker can make the
  union return more evidence than that, whatever its scores;
* **fused**: Recall@10 of the recipe itself, the fusion as it runs;
* **learned**: Recall@10 when the recipe's whole episode union is ranked by a reranker
  *learned* from the signals the library has offline (:mod:`.learned_bound`), fitted on
  the other conversations of the file: what a better stand-in could realistically get.

A selection whose ceiling lies below a target cannot reach it with any reranker; a wider
selection raises the ceiling, and the gap between ceiling and fused is what the reranker
leaves on the table. Run ``mnemis-no-s2`` beside a recipe to compare learned figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.config import Config
from memstrata.designs.mnemis.global_selection import select_heuristic
from memstrata.designs.mnemis.graph import Graph
from memstrata.designs.mnemis.hierarchy import Hierarchy
from memstrata.designs.mnemis.route import EpisodeUnion, MnemisRoute
from memstrata.errors import MemstrataError
from memstrata.eval.bench_locomo import OVERALL, import_conversations, ranked_sources
from memstrata.eval.qa.report import table
from memstrata.eval.report import write_report
from memstrata.importers import locomo
from memstrata.memory import AsyncMemory
from memstrata.retrieval.text import content_terms
from studies.mnemis_system2 import learned_bound

K = 10
SYSTEM1 = "mnemis-no-s2"
#: BM25 scores are read for this many episodes per question (the union is ~100)
BM25_DEPTH = 500


def _recall(found: set[str], gold: list[str]) -> float:
    return len(found & set(gold)) / len(set(gold))


@contextlib.contextmanager
def recorded_unions() -> Iterator[list[EpisodeUnion]]:
    """Every episode union the Mnemis route fuses while the block runs, in order: the
    route ranks each query's union once (``EpisodeUnion.rankings``), so the study listens
    there instead of the route keeping a hook for it."""
    seen: list[EpisodeUnion] = []
    original = EpisodeUnion.rankings

    def recording(self: EpisodeUnion) -> list[list[str]]:
        seen.append(self)
        return original(self)

    EpisodeUnion.rankings = recording  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        EpisodeUnion.rankings = original  # type: ignore[method-assign]


def _route(memory: AsyncMemory, recipe: str) -> MnemisRoute:
    for route in memory.engine.routes(recipe):
        if isinstance(route, MnemisRoute):
            return route
    raise ValueError(f"recipe {recipe!r} has no mnemis route")


async def run(
    memory: AsyncMemory,
    data_path: str | Path,
    recipes: list[str],
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    conversations = locomo.load(data_path)
    routes = {r: _route(memory, r) for r in recipes}
    await import_conversations(memory, conversations, progress)
    for conv in conversations:
        await memory.build(conv.namespace, recipe=SYSTEM1)
    samples = [await _sample(memory, conv) for conv in conversations]
    report: dict[str, Any] = {
        "data": str(data_path),
        "questions": sum(len(s.questions) for s in samples),
        "system1": SYSTEM1,
        "recipes": {},
    }
    for recipe, route in routes.items():
        params = route.params.selection
        rows: list[_Row] = []
        examples: list[learned_bound.Example] = []
        for smp in samples:
            with recorded_unions() as unions:
                fused = await ranked_sources(memory, recipe, smp.conv, K)
            if len(unions) != len(smp.conv.questions):
                raise ValueError(f"recipe {recipe!r} searched more than its mnemis route")
            fused_of = {
                q.question: set(f[:K]) for q, f in zip(smp.conv.questions, fused, strict=True)
            }
            union_of = {u.query: u for u in unions}
            for (category, top, gold, question), vec, bm25 in zip(
                smp.questions, smp.vecs, smp.bm25, strict=True
            ):
                reached: set[str] = set()
                if route.params.system2:
                    sel = select_heuristic(
                        smp.graph, smp.hierarchy, vec, params, set(content_terms(question))
                    )
                    reached = set(sel.support)
                rows.append(
                    _Row(
                        category,
                        _recall(top, gold),
                        _recall(top | (reached & set(gold)), gold),
                        _recall(fused_of[question], gold),
                        len(reached),
                        gold,
                    )
                )
                cands, X = learned_bound.features(union_of[question], vec, smp.space, bm25)
                examples.append(learned_bound.Example(smp.conv.namespace, cands, X, set(gold)))
        learned = learned_bound.leave_one_group_out(examples)
        for row, ranking in zip(rows, learned or [], strict=False):
            row.learned = _recall(set(ranking[:K]), row.gold)
        report["recipes"][recipe] = {
            "selection": dataclasses.asdict(params),
            "system2": route.params.system2,
            "groups": _groups(rows),
        }
    return report


@dataclasses.dataclass
class _Sample:
    """One conversation, loaded once for every recipe compared: its graph, hierarchy and
    episodes, and per answerable question (category, System-1's top 10, evidence, text),
    vector and BM25 scores of episodes."""

    conv: locomo.Conversation
    graph: Graph
    hierarchy: Hierarchy
    space: learned_bound.EpisodeSpace
    questions: list[tuple[int, set[str], list[str], str]]
    vecs: NDArray[np.float32]
    bm25: list[dict[str, float]]


@dataclasses.dataclass
class _Row:
    category: int
    system1: float
    ceiling: float
    fused: float
    episodes: int
    gold: list[str]
    learned: float | None = None


async def _sample(memory: AsyncMemory, conv: locomo.Conversation) -> _Sample:
    ranked = await ranked_sources(memory, SYSTEM1, conv, K)
    questions = [
        (q.category, set(r[:K]), q.evidence, q.question)
        for q, r in zip(conv.questions, ranked, strict=True)
        if q.evidence
    ]
    graph = Graph.load(memory.store, memory.embedder, conv.namespace)
    vecs = memory.embedder.embed([q for *_, q in questions])
    space = learned_bound.EpisodeSpace.load(memory.store, memory.embedder, conv.namespace)
    bm25 = []
    for *_, question in questions:
        hits = memory.store.bm25_episodes(conv.namespace, content_terms(question), BM25_DEPTH)
        bm25.append({space.id_of_key[key]: s for key, s in hits if key in space.id_of_key})
    return _Sample(conv, graph, Hierarchy(graph), space, questions, vecs, bm25)


def _groups(rows: list[_Row]) -> dict[str, dict[str, float | None]]:
    groups: dict[str, list[_Row]] = {}
    for row in rows:
        groups.setdefault(str(row.category), []).append(row)
        if row.category in OVERALL:
            groups.setdefault("overall", []).append(row)
    return {
        name: {
            "questions": len(g),
            "system1": round(statistics.fmean(r.system1 for r in g), 4),
            "ceiling": round(statistics.fmean(r.ceiling for r in g), 4),
            "fused": round(statistics.fmean(r.fused for r in g), 4),
            "learned": (
                None
                if any(r.learned is None for r in g)
                else round(statistics.fmean(r.learned or 0.0 for r in g), 4)
            ),
            "episodes_median": statistics.median(r.episodes for r in g),
        }
        for name, g in sorted(groups.items())
    }


def markdown(report: dict[str, Any]) -> str:
    head = (
        f"System-2 ceiling: {report['questions']} questions; Recall@{K}. System-1 is "
        f"`{report['system1']}`; ceiling = System-1 plus every evidence episode System-2 "
        "reached (a perfect reranker); fused = the recipe as it runs; learned = the union "
        "ranked by a logistic regression fitted on the other conversations (n/a with one)."
    )
    header = ["recipe", "group", "questions", "System-2 episodes (median)", "System-1"]
    header += ["ceiling", "fused", "learned"]
    rows = [
        [name, group, g["questions"], f"{g['episodes_median']:g}", g["system1"], g["ceiling"]]
        + [g["fused"], "n/a" if g["learned"] is None else g["learned"]]
        for name, entry in report["recipes"].items()
        for group, g in entry["groups"].items()
    ]
    return "\n".join([head, "", *table(header, rows)])


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, "selection", markdown)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m studies.mnemis_system2.ceiling",
        description="System-2's reach, its ceiling under a perfect reranker, and the fused "
        "Recall@10 of each recipe (heuristic tier), per LoCoMo category.",
    )
    parser.add_argument("file", type=Path, help="LoCoMo JSON file")
    parser.add_argument("--recipe", default="mnemis", help="comma-separated, mnemis routes")
    parser.add_argument("--config", type=Path, help="config TOML defining more recipes")
    parser.add_argument("--db", help="store (default: a fresh temp file)")
    parser.add_argument("--out", type=Path, default=Path("bench-out"), help="report folder")
    args = parser.parse_args(argv)
    recipes = [r.strip() for r in args.recipe.split(",") if r.strip()]
    overrides: dict[str, Any] = {"llm.kind": "none"}
    cfg = Config.load(args.config, **overrides)

    async def go(path: str) -> dict[str, Any]:
        memory = await AsyncMemory.open(path, config=cfg)
        try:
            return await run(memory, args.file, recipes)
        finally:
            await memory.close()

    with tempfile.TemporaryDirectory() as tmp:
        try:
            report = asyncio.run(go(args.db or str(Path(tmp) / "selection.db")))
        except (MemstrataError, ValueError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    jpath, mpath = write(report, args.out)
    sys.stdout.write(markdown(report))
    print(f"written {jpath} and {mpath}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
