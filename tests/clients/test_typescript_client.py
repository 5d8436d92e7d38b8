"""The TypeScript client (clients/typescript) passes its own tests, run by node against a
live ``memstrata serve`` of this checkout: every verb, the errors, tenants, non-ASCII text
and the committed types against the live OpenAPI document. Node and npm are part of the
test machine, so their absence fails here rather than skipping."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "typescript"
#: the tests of clients/typescript/test: verbs 14, errors 14, tenants 2, non-ASCII 3,
#: the OpenAPI document 1
EXPECTED = 34
#: npm ci, then tsc and the tests (the server takes a few seconds to start)
TIMEOUT_S = 900


def _installed() -> bool:
    """Whether node_modules holds what package-lock.json names (npm's own record of
    what it installed, node_modules/.package-lock.json, lists the same versions)."""
    record = CLIENT / "node_modules" / ".package-lock.json"
    if not record.exists():
        return False

    def versions(path: Path) -> dict[str, str]:
        packages = json.loads(path.read_text())["packages"]
        return {k: v.get("version", "") for k, v in packages.items() if k}

    return versions(record) == versions(CLIENT / "package-lock.json")


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=CLIENT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


@pytest.mark.slow
def test_the_typescript_client_passes_its_tests(subprocess_env: dict[str, str]) -> None:
    npm = shutil.which("npm")
    assert npm and shutil.which("node"), "node and npm are needed to test clients/typescript"
    # the server the tests start runs under this Python, with this checkout's src first
    env = {**subprocess_env, "MEMSTRATA_PYTHON": sys.executable}
    if not _installed():
        # from npm's cache when it holds the packages (offline after the first install)
        done = _run([npm, "ci", "--prefer-offline", "--no-audit", "--no-fund"], env)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    done = _run([npm, "test"], env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    counts = dict(re.findall(r"^ℹ (\w+) (\d+)$", output, re.MULTILINE))
    assert counts.get("tests") == str(EXPECTED), counts
    assert counts.get("pass") == str(EXPECTED), counts
    assert (counts.get("fail"), counts.get("skipped"), counts.get("todo")) == ("0", "0", "0")
