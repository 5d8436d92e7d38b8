"""The CrewAI adapter's tests (tests/integrations/crewai/), run in the venv CrewAI
installs in (`make crewai-env`: its pins do not install beside the other frameworks),
against this tree, with a store served here for their ``RemoteMemory`` cases."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from tests.service.service_helpers import serving

from memstrata.config import Config

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-crewai" / "bin" / "python"
#: the cases of tests/integrations/crewai/ (most over an in-process and a served store)
CASES = 29


@pytest.mark.slow
def test_the_crewai_suite_passes_in_its_own_venv(tmp_path: Path) -> None:
    if not PYTHON.exists():
        pytest.fail(f"no {PYTHON}: `make crewai-env` builds the venv CrewAI is tested in")
    with serving(Config.load(store=str(tmp_path / "served.db"))) as http:
        env = {
            **os.environ,
            "CREWAI_SUITE_STORE_URL": str(http.base_url).rstrip("/").removesuffix("/v1"),
            "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
            "CREWAI_STORAGE_DIR": str(tmp_path / "crewai"),
        }
        run = subprocess.run(
            [str(PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
             "-W", "ignore", "tests/integrations/crewai"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    tail = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert re.fullmatch(rf"{CASES} passed in [\d.]+s( \(\S+\))?", tail), tail
