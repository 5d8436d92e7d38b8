"""The BLAS thread limit, in fresh processes: one thread unless the process chose."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PROBE = """
import asyncio, json, sys
from threadpoolctl import threadpool_info
from memstrata.memory import AsyncMemory
before = {i["internal_api"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
async def main():
    async with AsyncMemory.open(sys.argv[1]):
        pass
asyncio.run(main())
after = {i["internal_api"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
print(json.dumps([sorted(before.values()), sorted(after.values())]))
"""


def _probe(tmp_path: Path, **env: str) -> Any:
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS",
             "OMP_NUM_THREADS", "MKL_NUM_THREADS")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "m.db")],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_a_memory_limits_blas_to_one_thread_unless_the_process_chose(tmp_path: Path) -> None:
    # numpy's own BLAS starts with a thread per core (at least 2 here, or the probe
    # could not tell the limit apart from the default)
    before, after = _probe(tmp_path)
    assert after and after == [1] * len(after)
    if (os.cpu_count() or 1) > 1:
        assert max(before) > 1
    chose = _probe(tmp_path, OPENBLAS_NUM_THREADS="2")  # the process's own choice stays
    assert chose == [[2] * len(after), [2] * len(after)]
    assert _probe(tmp_path, OMP_NUM_THREADS="2") == [[2] * len(after), [2] * len(after)]
