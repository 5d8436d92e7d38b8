"""``memstrata bench faults``: the kill runs of :mod:`memstrata.eval.faults` and the
concurrency run of :mod:`memstrata.eval.faults_concurrency`, as one report."""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memstrata.embed.base import Embedder
from memstrata.eval import faults, faults_concurrency
from memstrata.eval.report import write_report
from memstrata.eval.sites import Site

COLUMNS = ("kills", "recovered", "lost", "duplicates", "orphans", "invariant_failures")


def run(
    workdir: Path,
    embedder: Embedder,
    *,
    runs: int,
    concurrency_seconds: float,
    operations: Sequence[str] = faults.OPERATIONS,
    turns: int = 120,
    seed: int = 7,
    recipe: str = "mnemis",
    progress: Callable[[int], None] | None = None,
    site: Site | None = None,
) -> dict[str, Any]:
    """Every kill run (none when ``runs`` is 0), then (unless ``concurrency_seconds`` is
    0) the concurrency run, on stores of ``site`` (default: SQLite files in ``workdir``)."""
    harness = faults.Harness(
        workdir / "kills", os.environ, embedder, turns=turns, seed=seed, site=site
    )
    kills: list[faults.KillRun] = []
    if runs and operations:
        harness.built()  # the uninterrupted reference, and the range of the random delays
        kills = faults.kill_runs(harness, operations, runs, seed, progress)
    report: dict[str, Any] = {
        "setup": {
            "store": harness.site.kind,
            "runs_per_operation": runs,
            "turns": harness.turns,
            "batch_size": int(harness.env["MEMSTRATA_BUILD__BATCH_SIZE"]),
            "seed": seed,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "uninterrupted_seconds": {k: round(v, 2) for k, v in harness.seconds.items()},
        },
        "operations": faults.summarize(kills),
        "runs": faults.as_json(kills),
    }
    if concurrency_seconds > 0:
        conc = faults_concurrency.run(
            workdir / "concurrency",
            os.environ,
            embedder,
            recipe=recipe,
            seconds=concurrency_seconds,
            site=site,
        )
        report["concurrency"] = faults_concurrency.as_json(conc)
    return report


def failed(report: dict[str, Any]) -> bool:
    """Whether anything was lost, duplicated, orphaned, broken or not recovered."""
    rows = report["operations"]
    bad = any(r["recovered"] != r["runs"] or any(r[k] for k in COLUMNS[2:]) for r in rows)
    conc = report.get("concurrency")
    return bad or (conc is not None and not conc["ok"])


def markdown(report: dict[str, Any]) -> str:
    setup = report["setup"]
    lines = [
        "# Crashes and concurrency",
        "",
        f"Store: {setup.get('store', 'sqlite')}. SIGKILL at a random point, "
        f"{setup['runs_per_operation']} run(s) per operation, on a "
        f"{setup['turns']}-turn conversation (batches of {setup['batch_size']}, seed "
        f"{setup['seed']}); then the work finished and the store checked. 'kills': the process "
        "was still running when killed (else it had finished first).",
        "",
        "| operation | runs | kills | recovered | lost episodes | duplicates | orphans "
        "| invariant failures |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["operations"]:
        cells = [r["operation"], r["runs"], *(r[k] for k in COLUMNS)]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    conc = report.get("concurrency")
    if conc is not None:
        lines += [
            "",
            f"Concurrency ({conc['seconds']:g} s, recipe {conc['recipe']}): 4 writers, 2 "
            "workers, 1 searcher.",
            "",
            "| adds | visible exactly once | repeated adds (no-ops) | searches | episodes "
            "| built after the drain | errors | invariant failures |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {conc['adds']} | {conc['visible_once']} | {conc['repeated_adds']} "
            f"| {conc['searches']} | {conc['episodes']} | {conc['built']} "
            f"| {len(conc['errors'])} | {sum(len(v) for v in conc['problems'].values())} |",
        ]
    problems = [
        f"* {r['operation']} run {r['run']} ({r['trigger']}): {r['problems']}"
        for r in report["runs"]
        if r["problems"]
    ]
    if problems:
        lines += ["", "Problems:", "", *problems]
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    return write_report(report, out_dir, "faults", markdown)
