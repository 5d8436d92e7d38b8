"""CPU seconds (all threads) and wall seconds of one heuristic build of a LoCoMo
conversation, the turns added first and not counted::

    python -m studies.build_cpu ../shared/data/locomo/locomo-dev.json mindgraph conv-30

It reads only the public API, so it measures any version of the library (figures:
docs/knowledge.md, "Build cost"): on a shared machine the CPU time moves far less from
one run to the next than ``bench build``'s wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any


async def measure(path: str, recipe: str, conversation: str) -> tuple[float, float]:
    from memstrata import AsyncMemory
    from memstrata.config import Config
    from memstrata.eval.qa.formats import load

    sample = next(s for s in load(path, "locomo") if s.id == conversation)
    manual: dict[str, Any] = {"build.mode": "manual"}
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncMemory.open(Path(tmp) / "b.db", config=Config.load(**manual)) as m:
            await m.add_many([t.episode() for t in sample.turns], namespace=sample.id)
            wall, cpu = time.perf_counter(), time.process_time()
            await m.build(sample.id, recipe=recipe, tier="heuristic")
            return time.process_time() - cpu, time.perf_counter() - wall


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("recipe")
    parser.add_argument("conversation")
    args = parser.parse_args(argv)
    cpu, wall = asyncio.run(measure(args.file, args.recipe, args.conversation))
    print(f"{args.recipe} {args.conversation}: {cpu:.2f} s CPU, {wall:.2f} s wall")


if __name__ == "__main__":
    main()
