"""Where CrewAI is installed, its ``mcp<2`` is: ``memstrata[crewai]`` installs without the
MCP server, serves the REST API all the same, and ``/mcp`` and ``memstrata mcp`` say what
to install."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from tests.service.service_helpers import serving

from memstrata.config import Config


def test_rest_is_served_and_mcp_says_what_is_missing(tmp_path: Path) -> None:
    assert int(version("mcp").split(".")[0]) < 2  # CrewAI's pin, the case under test
    with serving(Config.load(store=str(tmp_path / "m.db"))) as http:
        added = http.post(
            "/namespaces/ana/episodes", json={"episodes": [{"text": "I moved to Porto."}]}
        )
        assert added.status_code in (200, 201), added.text
        found = http.post("/namespaces/ana/search", json={"query": "Where do I live?"})
        assert [h["text"] for h in found.json()["hits"]][:1] == ["I moved to Porto."]
        root = str(http.base_url).rstrip("/").removesuffix("/v1")
        mcp = http.post(f"{root}/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert mcp.status_code == 501, (mcp.url, mcp.text)
        message = mcp.json()["error"]["message"]
        assert "pip install 'memstrata[mcp]'" in message and f"mcp {version('mcp')}" in message


def test_the_mcp_command_says_what_to_install(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "memstrata", "mcp", "--db", str(tmp_path / "m.db")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0
    assert "pip install 'memstrata[mcp]'" in run.stdout + run.stderr
    assert not (tmp_path / "m.db").exists() or "Traceback" not in run.stderr
