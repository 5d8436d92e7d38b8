"""What a search's explanation (``Hit.why`` and the relevance score) costs::

    python -m studies.explain_cost ../shared/data/locomo/locomo-dev.json [--format locomo]
        [--recipe default]

Each sample is imported into a temporary store; each question is searched twice in a
row (k = 10, no token budget), once as shipped and once with the engine's and
System-1's explanation replaced by no-ops, the order alternating from one question to
the next so that both meet the same load. It prints the p50 of the wall time and of the
process's CPU time of each. Figures: docs/benchmarks.md, "A score that means the same
for every query".
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import memstrata.engine.engine as engine
import memstrata.retrieval.system1 as system1
from memstrata import AsyncMemory
from memstrata.config import Config
from memstrata.eval.qa.formats import FORMATS, load

SHIPPED = (engine.explain, system1.explain)


def _explaining(on: bool) -> None:
    def nothing(*_args: Any, **_kwargs: Any) -> None:
        return None

    engine.explain, system1.explain = SHIPPED if on else (nothing, nothing)


async def measure(path: str, fmt: str, recipe: str) -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {
        mode: {"wall": [], "cpu": []} for mode in ("with", "without")
    }
    manual: dict[str, Any] = {"build.mode": "manual"}
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncMemory.open(Path(tmp) / "cost.db", config=Config.load(**manual)) as m:
            for sample in load(path, fmt):
                await m.add_many([t.episode() for t in sample.turns], namespace=sample.id)
                await m.build(sample.id, recipe=recipe, tier="heuristic")
                questions = [qa.question for qa in sample.qa]
                await m.search_many(questions[:8], namespace=sample.id, k=10, recipe=recipe)
                for i, question in enumerate(questions):
                    for mode in ("with", "without") if i % 2 else ("without", "with"):
                        _explaining(mode == "with")
                        wall, cpu = time.perf_counter(), time.process_time()
                        await m.search(
                            question, namespace=sample.id, k=10, recipe=recipe, max_tokens=None
                        )
                        out[mode]["wall"].append(1000 * (time.perf_counter() - wall))
                        out[mode]["cpu"].append(1000 * (time.process_time() - cpu))
            _explaining(True)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--format", choices=list(FORMATS), default="locomo")
    parser.add_argument("--recipe", default="default")
    args = parser.parse_args(argv)
    times = asyncio.run(measure(args.file, args.format, args.recipe))
    for mode, got in times.items():
        wall, cpu = statistics.median(got["wall"]), statistics.median(got["cpu"])
        print(
            f"{mode} the explanation: {len(got['wall'])} searches, p50 {wall:.2f} ms wall, "
            f"{cpu:.2f} ms CPU"
        )


if __name__ == "__main__":
    main()
